"""skelanim.nn"""
