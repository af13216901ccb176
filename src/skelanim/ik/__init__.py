"""skelanim.ik"""
