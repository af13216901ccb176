"""skelanim.metrics"""
