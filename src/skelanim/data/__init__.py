"""skelanim.data"""
