"""A process that races akira's file tools: it flips a folder between a real folder and a
symlink to the outside until a stop file appears, then prints how many flips it made. Used by
tests/test_confinement.py and benchmarks/trust_harness.py.

    python -c SWAPPER <folder> <parking place> <outside> <stop file>
"""

SWAPPER = """
import os, shutil, sys
real, parked, outside, stop = sys.argv[1:]
flips = 0
while not os.path.exists(stop):
    try:
        os.rename(real, parked)
        os.symlink(outside, real)
        flips += 1
        os.unlink(real)
        os.rename(parked, real)
    except OSError:
        try:  # a write made `real` a folder while the folder was parked: put things back
            if os.path.isdir(parked) and not os.path.islink(real):
                shutil.rmtree(real, ignore_errors=True)
                os.rename(parked, real)
            elif os.path.islink(real):
                os.unlink(real)
                os.rename(parked, real)
        except OSError:
            pass
print(flips)
"""
