"""Imports a package from the library folder named in argv[1] (tests/agent/debugger/test_untraced.py).

The package (``fakelib``, written by the test under a ``site-packages`` folder) records whether a debugger traced
its module body and the body of the submodule it imports; this program prints both, then reaches two breakpoints.
"""

import sys

sys.path.insert(0, sys.argv[1])

import fakelib


def report(flags):
    line = f"traced outer={flags['outer']} inner={flags['inner']}"  # @bp in-function
    return line


after = sys.gettrace() is not None  # @bp after-import
print(report(fakelib.TRACED), "after", after)
