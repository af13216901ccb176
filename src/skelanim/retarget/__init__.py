"""skelanim.retarget"""
