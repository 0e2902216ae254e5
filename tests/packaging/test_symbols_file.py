# SPDX-License-Identifier: Apache-2.0
"""debian/libdisttrain1.symbols lists exactly the dt_* symbols libdisttrain.so.1 exports:
a function added to the C API without its line would make the package's dependencies
too loose (dpkg-gensymbols only warns), one removed would break the ABI promise."""
import re
import subprocess

from conftest import BUILD, REPO


def exported():
    lib = BUILD / "core" / "libdisttrain.so.1"  # the soname link: this build's library
    assert lib.exists(), f"no {lib}: build the project first"
    out = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True,
                         text=True, check=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.split()[-1].startswith("dt_")}


def recorded():
    text = (REPO / "debian" / "libdisttrain1.symbols").read_text()
    return set(re.findall(r"^ (dt_\w+)@Base ", text, re.M))


def test_the_symbols_file_lists_every_exported_function_and_no_other():
    have, listed = exported(), recorded()
    assert not have - listed, f"exported but not in debian/libdisttrain1.symbols (add them " \
                              f"with the version that introduces them): {sorted(have - listed)}"
    assert not listed - have, f"in the symbols file but not exported: {sorted(listed - have)}"
