"""skelanim.ops"""
