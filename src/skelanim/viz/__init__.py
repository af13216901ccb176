"""skelanim.viz"""
