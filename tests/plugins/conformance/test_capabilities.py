# SPDX-License-Identifier: Apache-2.0
"""Every transport plugin that was built answers the capability query through the core.

A one-rank job per transport with debug logging: the core asks the plugin once, at load,
and logs its answer. Each of tcp, ucx and mpi is a host transport that carries the
engine's control traffic. Transports that were not built are skipped with the reason.
"""
import pytest

from conftest import run
from test_conformance import TRANSPORTS, launch_command, plugin_built, plugin_dir

TIMEOUT_S = 120


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_plugin_answers_host_only_with_control_traffic(transport):
    if not plugin_built(transport):
        pytest.skip(f"transport '{transport}' was not built "
                    f"(no {plugin_dir(transport)}/libdt-transport-{transport}.so)")
    env = {"DISTTRAIN_TRANSPORT": transport,
           "DISTTRAIN_PLUGIN_PATH": str(plugin_dir(transport)),
           "DISTTRAIN_LOG_LEVEL": "debug",
           "DISTTRAIN_TIMEOUT": "60"}
    command = launch_command(transport, 1) + ["--no-large"]
    result = run(command, env=env, timeout=TIMEOUT_S)
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"exit {result.returncode}:\n{output[-4000:]}"
    answer = (f"transport '{transport}' accepts point-to-point: host; "
              "native collectives: host; control traffic: yes")
    assert answer in output, output[-4000:]
