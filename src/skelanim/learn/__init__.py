"""skelanim.learn"""
