"""skelanim.serve"""
