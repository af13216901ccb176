"""Build script for the optional compiled part of skelanim; all metadata is in pyproject.toml.

``skelanim.io._bvh_numbers`` (``src/skelanim/io/_bvh_numbers.c``) scans the numbers of a BVH MOTION block.
It is optional: without a C compiler the build goes on and :mod:`skelanim.io.bvh_numbers` uses its NumPy
path, which gives the same values and errors (only slower).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "skelanim.io._bvh_numbers",
            sources=["src/skelanim/io/_bvh_numbers.c"],
            optional=True,
        )
    ]
)
