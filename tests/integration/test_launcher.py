# SPDX-License-Identifier: Apache-2.0
"""disttrainrun: placement, environment, tagged output, fail-fast stop, signals, errors.

Ranks are plain shell commands, so these tests need only the launcher. Remote hosts are
simulated with a fake `ssh` on PATH that runs the remote command locally (through the
same login-shell word joining as real ssh), which exercises the quoting, the token sent
on stdin and the remote wrapper without a real sshd. Every job runs under a timeout.
"""
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from conftest import build_path, clean_env, run  # noqa: E402

SUMMARY = re.compile(r"^disttrainrun: ", re.M)

FAKE_SSH = r"""#!/bin/sh
# Fake ssh: records and skips options, fails for hosts named down-*, otherwise runs the
# command here (with FAKE_SSH_CLEAN_ENV, in an environment as bare as a fresh login's).
opts=
while [ $# -gt 0 ]; do
  case "$1" in -o|-p|-i|-l) opts="$opts $1 $2"; shift 2;; -*) opts="$opts $1"; shift;; *) break;; esac
done
host=$1; shift
echo "$opts $host" >> "$FAKE_SSH_LOG.options"
case "$host" in
  down-*) echo "ssh: connect to host $host port 22: Connection refused" >&2; exit 255;;
esac
echo "$host" >> "$FAKE_SSH_LOG"
printf '%s\n' "$*" >> "$FAKE_SSH_LOG.commands"
if [ -n "$FAKE_SSH_DETACH" ]; then
  # Like a real remote side: outside our process group, reachable only through stdin.
  exec 3<&0
  setsid sh -c "$*" <&3 3<&- &
  wait $!
  exit $?
fi
if [ -n "$FAKE_SSH_CLEAN_ENV" ]; then
  exec env -i PATH="$PATH" HOME="$HOME" sh -c "$*"
fi
exec sh -c "$*"
"""


def summaries(stderr):
    return [line for line in stderr.splitlines() if SUMMARY.match(line)]


STOPPED_BY_US = re.compile(r"disttrainrun: ranks? [0-9, -]+ (was|were) stopped by "
                           r"disttrainrun with signal \d+ \(.*\)")


def first_failure(stderr):
    """The summary's first line (the failure), checking that the others only name ranks
    disttrainrun ended while it stopped the job."""
    lines = summaries(stderr)
    assert lines, stderr
    assert all(STOPPED_BY_US.fullmatch(line) for line in lines[1:]), stderr
    assert stderr.splitlines()[-len(lines):] == lines  # after the ranks' own output
    return lines[0]


def pids_in(path):
    if not path.exists():
        return []
    return [int(p) for p in path.read_text().split()]


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); it is gone for our purposes.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def assert_all_gone(pids, within=3.0):
    deadline = time.monotonic() + within
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.05)
    left = [p for p in pids if alive(p)]
    for p in left:
        os.kill(p, signal.SIGKILL)
    assert not left, f"rank processes still running after the launcher ended: {left}"


def wait_for_lines(path, count, proc, timeout=15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if len(pids_in(path)) >= count:
            return
        if proc.poll() is not None:
            pytest.fail(f"launcher ended early with {proc.returncode}: {proc.communicate()}")
        time.sleep(0.05)
    proc.kill()
    pytest.fail(f"ranks did not all start within {timeout} s")


@pytest.fixture
def fake_ssh(tmp_path):
    """PATH and variables that make `ssh` the fake above; returns (env, log path)."""
    bindir = tmp_path / "fakebin"
    bindir.mkdir()
    ssh = bindir / "ssh"
    ssh.write_text(FAKE_SSH)
    ssh.chmod(0o755)
    log = tmp_path / "ssh.log"
    env = {"PATH": f"{bindir}:{os.environ['PATH']}", "FAKE_SSH_LOG": str(log),
           # Tests stay on loopback: remote ranks are told 127.0.0.1.
           "DISTTRAIN_STORE_ADDR": "127.0.0.1"}
    return env, log


# --- success, output, environment -------------------------------------------------------

def test_all_ranks_succeed_and_lines_are_tagged(disttrainrun):
    r = run([disttrainrun, "-np", "3", "sh", "-c",
             'echo "out $DISTTRAIN_RANK"; echo "err $DISTTRAIN_RANK" >&2; '
             'printf "tail $DISTTRAIN_RANK"'], timeout=30)
    assert r.returncode == 0, r.stderr
    assert sorted(r.stdout.splitlines()) == sorted(
        [f"[{i}] out {i}" for i in range(3)] + [f"[{i}] tail {i}" for i in range(3)])
    assert sorted(r.stderr.splitlines()) == [f"[{i}] err {i}" for i in range(3)]
    assert not summaries(r.stderr)


def test_no_tag_output_passes_lines_through(disttrainrun):
    r = run([disttrainrun, "-np", "2", "--no-tag-output", "sh", "-c", "echo plain"],
            timeout=30)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["plain", "plain"]


def test_no_tag_output_passes_bytes_through(disttrainrun, tmp_path):
    # A line longer than the launcher's 1 MiB line buffer and a last line without '\n'
    # come out as the rank wrote them: untagged output gets no '\n' added.
    data = tmp_path / "data"
    data.write_bytes(b"x" * 3_000_000 + b"\n" + b"\0\xff" * 1_500_000 + b"\nend")
    r = subprocess.run([str(disttrainrun), "-np", "1", "--no-tag-output", "cat", str(data)],
                       env=clean_env(), capture_output=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert r.stdout == data.read_bytes(), (len(r.stdout), r.stdout[1048570:1048590])


def test_lines_of_different_ranks_never_interleave(disttrainrun):
    # Each rank writes long lines in many small pieces; every output line must still be
    # one rank's whole line.
    script = ('i=0; while [ $i -lt 200 ]; do '
              'printf "%s" "$DISTTRAIN_RANK$DISTTRAIN_RANK$DISTTRAIN_RANK"; '
              'printf "%s" "$DISTTRAIN_RANK$DISTTRAIN_RANK$DISTTRAIN_RANK"; '
              'printf "%0500d\\n" 0 | tr 0 "$DISTTRAIN_RANK"; i=$((i+1)); done')
    r = run([disttrainrun, "-np", "4", "sh", "-c", script], timeout=60)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 800
    for line in lines:
        m = re.fullmatch(r"\[(\d)\] (\d+)", line)
        assert m, f"malformed line {line[:80]!r}"
        assert set(m.group(2)) == {m.group(1)} and len(m.group(2)) == 506, line[:80]


def test_rank_0_reads_our_stdin_and_the_others_dev_null(disttrainrun):
    # As with mpirun: what is piped to the launcher goes to rank 0 only.
    r = run([disttrainrun, "-np", "2", "sh", "-c", 'echo "got $(cat)"'], input="hello\n",
            timeout=30)
    assert r.returncode == 0, r.stderr
    assert sorted(r.stdout.splitlines()) == ["[0] got hello", "[1] got "], r.stdout


def parse_env_lines(stdout):
    ranks = {}
    for line in stdout.splitlines():
        m = re.fullmatch(r"\[(\d+)\] (.*)", line)
        assert m, line
        ranks[int(m.group(1))] = dict(kv.split("=", 1) for kv in m.group(2).split())
    return ranks


ENV_DUMP = ('echo "rank=$DISTTRAIN_RANK size=$DISTTRAIN_SIZE '
            'local_rank=$DISTTRAIN_LOCAL_RANK local_size=$DISTTRAIN_LOCAL_SIZE '
            'addr=$DISTTRAIN_STORE_ADDR server=$DISTTRAIN_STORE_SERVER '
            'token=$DISTTRAIN_JOB_TOKEN level=${DISTTRAIN_LOG_LEVEL:-none} cwd=$(pwd)"')


def test_environment_is_set_per_rank(disttrainrun, tmp_path):
    r = run([disttrainrun, "-np", "3", "sh", "-c", ENV_DUMP], timeout=30, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    ranks = parse_env_lines(r.stdout)
    assert sorted(ranks) == [0, 1, 2]
    for i, env in ranks.items():
        assert env["rank"] == str(i) and env["size"] == "3"
        assert env["local_rank"] == str(i) and env["local_size"] == "3"
        assert env["server"] == "launcher"
        assert re.fullmatch(r"127\.0\.0\.1:\d+", env["addr"]), env["addr"]
        assert re.fullmatch(r"[0-9a-f]{64}", env["token"]), env["token"]
        assert env["cwd"] == str(tmp_path)
    assert len({e["addr"] for e in ranks.values()}) == 1
    assert len({e["token"] for e in ranks.values()}) == 1


def test_launcher_serves_the_store(disttrainrun):
    # The full handshake is the bootstrap suite's business; here: something listens at
    # the address the ranks are told, for as long as the job runs.
    probe = ("import os, socket; h, p = os.environ['DISTTRAIN_STORE_ADDR'].rsplit(':', 1); "
             "socket.create_connection((h, int(p)), timeout=5).close(); print('connected')")
    r = run([disttrainrun, "-np", "2", "/usr/bin/python3", "-c", probe], timeout=30)
    assert r.returncode == 0, r.stderr
    assert sorted(r.stdout.splitlines()) == ["[0] connected", "[1] connected"]


def test_each_job_gets_a_fresh_token(disttrainrun):
    tokens = set()
    for _ in range(2):
        r = run([disttrainrun, "-np", "1", "sh", "-c", 'echo "$DISTTRAIN_JOB_TOKEN"'],
                timeout=30)
        assert r.returncode == 0, r.stderr
        tokens.add(r.stdout.strip())
    assert len(tokens) == 2


def test_inherited_rank_variables_are_replaced(disttrainrun):
    r = run([disttrainrun, "-np", "2", "sh", "-c", ENV_DUMP], timeout=30,
            env={"DISTTRAIN_RANK": "7", "DISTTRAIN_SIZE": "9", "DISTTRAIN_JOB_TOKEN": "x",
                 "DISTTRAIN_LOG_LEVEL": "info"})
    assert r.returncode == 0, r.stderr
    ranks = parse_env_lines(r.stdout)
    assert {e["rank"] for e in ranks.values()} == {"0", "1"}
    assert {e["size"] for e in ranks.values()} == {"2"}
    assert all(len(e["token"]) == 64 for e in ranks.values())
    assert all(e["level"] == "info" for e in ranks.values())


def test_ranks_fill_host_slots_in_order(disttrainrun, fake_ssh, tmp_path):
    env, log = fake_ssh
    env["DISTTRAIN_LOG_LEVEL"] = "warn"
    r = run([disttrainrun, "-np", "5", "-H", "localhost:2,nodeA:2,nodeB:4",
             "sh", "-c", ENV_DUMP], env=env, timeout=30, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    ranks = parse_env_lines(r.stdout)
    expected = {0: ("0", "2"), 1: ("1", "2"), 2: ("0", "2"), 3: ("1", "2"), 4: ("0", "1")}
    for i, (local_rank, local_size) in expected.items():
        assert ranks[i]["rank"] == str(i) and ranks[i]["size"] == "5"
        assert (ranks[i]["local_rank"], ranks[i]["local_size"]) == (local_rank, local_size)
        # Remote ranks: same store, same token (sent on stdin, not on the command line),
        # our DISTTRAIN_* settings, our working directory.
        assert ranks[i]["addr"] == ranks[0]["addr"]
        assert ranks[i]["token"] == ranks[0]["token"]
        assert ranks[i]["level"] == "warn"
        assert ranks[i]["cwd"] == str(tmp_path)
    # One reachability check per remote host, then one ssh per remote rank.
    assert sorted(log.read_text().split()) == ["nodeA", "nodeA", "nodeA", "nodeB", "nodeB"]
    commands = pathlib.Path(str(log) + ".commands").read_text()
    assert "DISTTRAIN_RANK=4" in commands
    assert ranks[0]["token"] not in commands


def test_remote_command_arguments_survive_quoting(disttrainrun, fake_ssh, tmp_path):
    env, _ = fake_ssh
    weird = ["it's", 'a "b"', "$HOME", "`id`", "x;y", "  spaced  ", ""]
    r = run([disttrainrun, "-np", "1", "--launcher", "ssh", "-H", "nodeA",
             "/usr/bin/python3", "-c", "import sys; print(repr(sys.argv[1:]))"] + weird,
            env=env, timeout=30, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"[0] {weird!r}\n"


SHOW_VARS = 'echo "FOO=${FOO-unset} BAR=${BAR-unset} NCCL_DEBUG=${NCCL_DEBUG-unset} ' \
            'PYTHONPATH=${PYTHONPATH-unset}"'


def test_x_forwards_variables_to_local_ranks(disttrainrun):
    r = run([disttrainrun, "-np", "2", "-x", "FOO", "-x", "BAR=given", "-x", "NOT_SET_HERE",
             "sh", "-c", SHOW_VARS + '; echo "NOT_SET_HERE=${NOT_SET_HERE-unset}"'],
            env={"FOO": "ours", "BAR": "replaced"}, timeout=30)
    assert r.returncode == 0, r.stderr
    for rank in (0, 1):
        assert f"[{rank}] FOO=ours BAR=given NCCL_DEBUG=unset PYTHONPATH=unset" in \
            r.stdout.splitlines(), r.stdout
        assert f"[{rank}] NOT_SET_HERE=unset" in r.stdout.splitlines()


def test_x_of_a_variable_unset_here_is_warned_of_once(disttrainrun):
    # A misspelt -x name would silently leave every rank without the variable.
    r = run([disttrainrun, "-np", "2", "-x", "PYTONPATH", "-x", "FOO", "-x", "PYTONPATH",
             "-x", "BAR=set", "true"], env={"FOO": "ours"}, timeout=30)
    assert r.returncode == 0, r.stderr
    assert r.stderr.splitlines() == [
        "disttrainrun: warning: -x PYTONPATH: PYTONPATH is not set here, so no rank gets it "
        "(a misspelt name?); -x PYTONPATH=VALUE gives it a value"], r.stderr


def test_x_and_default_list_reach_ssh_ranks(disttrainrun, fake_ssh, tmp_path):
    env, _ = fake_ssh
    env.update({"FAKE_SSH_CLEAN_ENV": "1", "FOO": "ours", "BAR": "not forwarded",
                "NCCL_DEBUG": "INFO", "PYTHONPATH": "/not/forwarded"})
    r = run([disttrainrun, "-np", "2", "--launcher", "ssh", "-H", "nodeA:2", "-x", "FOO",
             "sh", "-c", SHOW_VARS], env=env, timeout=30, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert sorted(r.stdout.splitlines()) == [
        f"[{i}] FOO=ours BAR=unset NCCL_DEBUG=INFO PYTHONPATH=unset" for i in (0, 1)]
    r = run([disttrainrun, "-np", "1", "--launcher", "ssh", "-H", "nodeA", "-x", "PYTHONPATH",
             "-x", "NCCL_DEBUG=WARN", "-x", "BAR=it's $given", "sh", "-c", SHOW_VARS],
            env=env, timeout=30, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == ("[0] FOO=unset BAR=it's $given NCCL_DEBUG=WARN "
                        "PYTHONPATH=/not/forwarded\n")


def test_ssh_port_and_identity_are_passed_to_ssh(disttrainrun, fake_ssh, tmp_path):
    env, log = fake_ssh
    key = tmp_path / "id key"
    key.write_text("not a real key\n")
    r = run([disttrainrun, "-np", "2", "-H", "nodeA:2", "--ssh-port", "2222",
             "--ssh-identity", key, "sh", "-c", "echo ok"], env=env, timeout=30)
    assert r.returncode == 0, r.stderr
    options = pathlib.Path(str(log) + ".options").read_text().splitlines()
    # The reachability check, then one ssh per rank.
    assert options == [f" -o BatchMode=yes -p 2222 -i {key} -o ConnectTimeout=5 nodeA"] + \
        [f" -o BatchMode=yes -p 2222 -i {key} nodeA"] * 2


def test_ssh_port_and_identity_appear_in_the_unreachable_hint(disttrainrun, fake_ssh,
                                                              tmp_path):
    env, _ = fake_ssh
    key = tmp_path / "key"
    key.write_text("k\n")
    r = run([disttrainrun, "-np", "1", "-H", "down-a", "--ssh-port", "2200",
             "--ssh-identity", key, "true"], env=env, timeout=30)
    assert r.returncode == 1
    assert r.stderr.strip().endswith(
        f"(ssh -o BatchMode=yes -p 2200 -i {key} down-a true)"), r.stderr


def test_hostfile_places_ranks_like_dash_h(disttrainrun, fake_ssh, tmp_path):
    env, log = fake_ssh
    hostfile = tmp_path / "hosts"
    hostfile.write_text("# two here, two on nodeA, one on nodeB\n"
                        "localhost slots=2\n\n"
                        "nodeA:2   # Horovod form\n"
                        "nodeB slots=4\n")
    r = run([disttrainrun, "-np", "5", "--hostfile", hostfile, "sh", "-c", ENV_DUMP],
            env=env, timeout=30, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    ranks = parse_env_lines(r.stdout)
    expected = {0: ("0", "2"), 1: ("1", "2"), 2: ("0", "2"), 3: ("1", "2"), 4: ("0", "1")}
    for i, (local_rank, local_size) in expected.items():
        assert (ranks[i]["local_rank"], ranks[i]["local_size"]) == (local_rank, local_size)
    assert sorted(log.read_text().split()) == ["nodeA", "nodeA", "nodeA", "nodeB", "nodeB"]


def test_launcher_mpi_gets_hostfile_exports_and_ssh_options(disttrainrun, tmp_path):
    # A fake mpirun that records its command line and the values of what it forwards.
    bindir = tmp_path / "fakebin"
    bindir.mkdir()
    mpirun = bindir / "mpirun"
    mpirun.write_text('#!/bin/sh\nprintf "%s\\n" "$@" > "$MPIRUN_LOG"\n'
                      'echo "FOO=$FOO NCCL_DEBUG=$NCCL_DEBUG" >> "$MPIRUN_LOG"\n')
    mpirun.chmod(0o755)
    log = tmp_path / "mpirun.log"
    key = tmp_path / "key"
    key.write_text("k\n")
    hostfile = tmp_path / "hosts"
    hostfile.write_text("localhost slots=2\nnodeA:1\n")
    r = run([disttrainrun, "--launcher", "mpi", "--hostfile", hostfile, "-np", "3",
             "-x", "FOO=bar", "-x", "PYTHONPATH", "--ssh-port", "2222", "--ssh-identity", key,
             "prog", "arg"],
            env={"PATH": f"{bindir}:{os.environ['PATH']}", "MPIRUN_LOG": str(log),
                 "NCCL_DEBUG": "INFO", "PYTHONPATH": "/p"}, timeout=30)
    assert r.returncode == 0, r.stderr
    lines = log.read_text().splitlines()
    argv, values = lines[:-1], lines[-1]
    assert argv[argv.index("-H") + 1] == "localhost:2,nodeA:1"
    assert argv[argv.index("plm_rsh_args") + 1] == f"-p 2222 -i {key}"
    exported = {argv[i + 1] for i, a in enumerate(argv) if a == "-x"}
    assert {"FOO", "NCCL_DEBUG", "PYTHONPATH", "DISTTRAIN_JOB_TOKEN"} <= exported, argv
    assert argv[-2:] == ["prog", "arg"]
    assert values == "FOO=bar NCCL_DEBUG=INFO"


@pytest.mark.parametrize("bind, expected", [
    ([], None), (["--bind-to", "auto"], None),
    (["--bind-to", "none"], "none"), (["--bind-to", "core"], "core"),
])
def test_launcher_mpi_gets_bind_to(disttrainrun, tmp_path, bind, expected):
    # mpirun binds each of up to 2 ranks to a core by default: --bind-to none must reach
    # it, or the ranks get one core each against what was asked.
    bindir = tmp_path / "fakebin"
    bindir.mkdir()
    mpirun = bindir / "mpirun"
    mpirun.write_text('#!/bin/sh\nprintf "%s\\n" "$@" > "$MPIRUN_LOG"\n')
    mpirun.chmod(0o755)
    log = tmp_path / "mpirun.log"
    r = run([disttrainrun, "--launcher", "mpi", "-np", "2"] + bind + ["prog"],
            env={"PATH": f"{bindir}:{os.environ['PATH']}", "MPIRUN_LOG": str(log)}, timeout=30)
    assert r.returncode == 0, r.stderr
    argv = log.read_text().splitlines()
    if expected is None:
        assert "--bind-to" not in argv, argv
    else:
        assert argv[argv.index("--bind-to") + 1] == expected, argv
    assert argv[-1] == "prog"


@pytest.mark.parametrize("text, line, message", [
    ("node1 slots=2\nnode2 slot=2\n", 2, "unexpected 'slot=2' after host 'node2'"),
    ("# c\n\nnode1:two\n", 3, "has a bad slot count"),
    ("node1 slots=2 max_slots=4\n", 1, "'max_slots=4' is not supported"),
    ("a:1\nb:1\na:1\n", 3, "host 'a' is already on line 1"),
    # Typos that used to reach ssh as host names.
    ("localhost:1:2\n", 1, "host 'localhost:1:2' is not a host name or IP address"),
    ("localhost:1\nslots=2\n", 2, "host 'slots=2' is not a host name or IP address"),
    ("localhost slots=1048577\n", 1, "has more slots than the 1048576 ranks a job may have"),
])
def test_bad_hostfile_line_is_named(disttrainrun, tmp_path, text, line, message):
    hostfile = tmp_path / "hosts"
    hostfile.write_text(text)
    marker = tmp_path / "started"
    r = run([disttrainrun, "-np", "1", "--hostfile", hostfile, "touch", marker], timeout=30)
    assert r.returncode == 2, (r.returncode, r.stderr)
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"disttrainrun: {hostfile}:{line}: "), \
        r.stderr
    assert message in lines[0], lines[0]
    assert not marker.exists()


def test_hostfile_with_byte_order_mark_and_large_slot_counts(disttrainrun, tmp_path):
    # As a Windows editor saves it; and a slot count above 999999, within the rank limit.
    hostfile = tmp_path / "hosts"
    hostfile.write_bytes(b"\xef\xbb\xbflocalhost slots=1000000\r\n")
    r = run([disttrainrun, "-np", "2", "--hostfile", hostfile, "sh", "-c", ENV_DUMP],
            timeout=30)
    assert r.returncode == 0, r.stderr
    ranks = parse_env_lines(r.stdout)
    assert [ranks[i]["local_rank"] for i in (0, 1)] == ["0", "1"], r.stdout


def test_version(disttrainrun):
    meson = (pathlib.Path(__file__).resolve().parents[2] / "meson.build").read_text()
    version = re.search(r"version\s*:\s*'([^']+)'", meson).group(1)
    r = run([disttrainrun, "--version"], timeout=30)
    assert r.returncode == 0, r.stderr
    assert re.fullmatch(rf"disttrainrun \(libdisttrain\) {re.escape(version)}, API \d+\.\d+\n",
                        r.stdout), r.stdout
    # The library reports the same version (dt_get_version), not a copy kept by hand.
    lib = run([sys.executable, "-c", "import disttrain; print(disttrain.version())"],
              env={**os.environ, "PYTHONPATH": str(pathlib.Path(__file__).resolve().parents[2]
                                                   / "bindings" / "python")}, timeout=30)
    assert lib.returncode == 0 and lib.stdout.strip() == version, lib.stdout + lib.stderr


# --- failures ---------------------------------------------------------------------------

def sleeping_ranks_script(pidfile, failing_rank, failure):
    return (f'echo $$ >> {pidfile}; '
            f'if [ "$DISTTRAIN_RANK" = {failing_rank} ]; then sleep 0.3; {failure}; fi; '
            f'exec sleep 60')


def test_failing_rank_stops_the_others(disttrainrun, tmp_path):
    pidfile = tmp_path / "pids"
    start = time.monotonic()
    r = run([disttrainrun, "-np", "3", "sh", "-c",
             sleeping_ranks_script(pidfile, 1, "echo bye; exit 3")], timeout=30)
    elapsed = time.monotonic() - start
    assert r.returncode == 3, r.stderr
    lines = summaries(r.stderr)
    assert len(lines) == 2, r.stderr
    assert re.fullmatch(r"disttrainrun: rank 1 \(host localhost, pid \d+\) exited with "
                        r"code 3; stopped the other ranks", lines[0]), lines[0]
    assert lines[1] == ("disttrainrun: ranks 0, 2 were stopped by disttrainrun with "
                        "signal 15 (Terminated)")
    assert r.stderr.splitlines()[-2:] == lines  # after the ranks' own output
    assert "[1] bye" in r.stdout.splitlines()
    assert elapsed < 10, f"the other ranks were not stopped promptly ({elapsed:.1f} s)"
    assert len(pids_in(pidfile)) == 3
    assert_all_gone(pids_in(pidfile))


def test_rank_killed_by_signal_is_reported(disttrainrun, tmp_path):
    pidfile = tmp_path / "pids"
    r = run([disttrainrun, "-np", "2", "sh", "-c",
             sleeping_ranks_script(pidfile, 1, "kill -9 $$")], timeout=30)
    assert r.returncode == 128 + 9, r.stderr
    lines = summaries(r.stderr)
    assert len(lines) == 2, r.stderr
    assert re.fullmatch(r"disttrainrun: rank 1 \(host localhost, pid \d+\) was killed by "
                        r"signal 9 \(Killed\); stopped the other ranks", lines[0]), lines[0]
    assert lines[1] == ("disttrainrun: rank 0 was stopped by disttrainrun with "
                        "signal 15 (Terminated)")
    assert_all_gone(pids_in(pidfile))


def test_first_failure_is_the_one_reported(disttrainrun):
    r = run([disttrainrun, "-np", "2", "sh", "-c",
             'if [ "$DISTTRAIN_RANK" = 0 ]; then sleep 0.5; exit 5; fi; exit 4'],
            timeout=30)
    assert r.returncode == 4, r.stderr
    line = first_failure(r.stderr)
    assert "rank 1 " in line and "code 4" in line, r.stderr


def test_every_rank_killed_by_a_signal_is_reported(disttrainrun, tmp_path):
    # Rank 3 is SIGKILLed (the OOM killer, say); then rank 1 crashes (SIGABRT) while ranks
    # 0 and 2 exit with an error, as survivors do. Rank 4 dies by our SIGTERM. The crash
    # must be named beside the first failure, and told apart from what we ended.
    pidfile, dead = tmp_path / "pids", tmp_path / "victim-dead"
    script = (f'echo $$ >> {pidfile}; '
              f'case "$DISTTRAIN_RANK" in '
              f'3) sleep 0.2; touch {dead}; kill -9 $$;; '
              f'4) exec sleep 60;; esac; '
              f'trap "" TERM; while [ ! -e {dead} ]; do sleep 0.05; done; sleep 0.5; '
              f'if [ "$DISTTRAIN_RANK" = 1 ]; then kill -ABRT $$; fi; exit 3')
    r = run([disttrainrun, "-np", "5", "sh", "-c", script], timeout=30)
    assert r.returncode == 128 + 9, r.stderr
    lines = summaries(r.stderr)
    assert len(lines) == 3, r.stderr
    assert re.fullmatch(r"disttrainrun: rank 3 \(host localhost, pid \d+\) was killed by "
                        r"signal 9 \(Killed\); stopped the other ranks", lines[0]), r.stderr
    assert re.fullmatch(r"disttrainrun: rank 1 \(host localhost, pid \d+\) was also killed "
                        r"by signal 6 \(Aborted\), not sent by disttrainrun", lines[1]), r.stderr
    assert lines[2] == ("disttrainrun: rank 4 was stopped by disttrainrun with "
                        "signal 15 (Terminated)")
    assert r.stderr.splitlines()[-3:] == lines
    assert_all_gone(pids_in(pidfile))


def test_every_rank_failing_on_its_own_is_listed(disttrainrun, tmp_path):
    # Rank 1 fails (exit 3), but rank 0, reacting to it (as a peer that sees it leave
    # does), exits 1 a moment before rank 1 has finished exiting. The launcher cannot tell
    # which failure came first from the codes: it names both, and the job's status is the
    # first exit's. Rank 2 is stopped.
    # Rank 1 exits as soon as rank 0 has been reaped, i.e. once the launcher has seen the
    # first failure.
    first, pidfile = tmp_path / "rank0", tmp_path / "pids"
    script = (f'echo $$ >> {pidfile}; case "$DISTTRAIN_RANK" in '
              f'0) echo $$ > {first}.tmp; mv {first}.tmp {first}; sleep 0.3; exit 1;; '
              f'1) while [ ! -e {first} ]; do sleep 0.01; done; p=$(cat {first}); '
              f'while kill -0 $p 2>/dev/null; do sleep 0.01; done; exit 3;; '
              f'*) exec sleep 60;; esac')
    # Rank 1 has the launcher's quarter of a second to exit; on a host loaded enough to
    # keep it off the CPU that long it is stopped with rank 2 instead, which is right too:
    # a few tries, until one lists both.
    for _ in range(3):
        first.unlink(missing_ok=True)
        r = run([disttrainrun, "-np", "3", "sh", "-c", script], timeout=30)
        assert r.returncode == 1, r.stderr
        lines = summaries(r.stderr)
        assert_all_gone(pids_in(pidfile))
        if lines[-1] == ("disttrainrun: ranks 1, 2 were stopped by disttrainrun with signal "
                         "15 (Terminated)"):
            continue  # rank 1 was too late
        assert len(lines) == 2, r.stderr
        assert re.fullmatch(r"disttrainrun: ranks 0 \(code 1\), 1 \(code 3\) exited with "
                            r"errors, first to exit: rank 0 \(host localhost, pid \d+\); "
                            r"stopped the other ranks", lines[0]), r.stderr
        assert lines[1] == ("disttrainrun: rank 2 was stopped by disttrainrun with "
                            "signal 15 (Terminated)")
        return
    pytest.fail(f"rank 1 was stopped in every try, never listed:\n{r.stderr}")


def test_rank_reporting_a_lost_peer_is_not_named_as_the_cause(disttrainrun, tmp_path):
    # Rank 0 exits first, having reported a lost peer as a victim does; rank 1, which
    # did not, exits 3 just after: it is named as the likely cause, not rank 0.
    first, pidfile = tmp_path / "rank0", tmp_path / "pids"
    script = (f'echo $$ >> {pidfile}; case "$DISTTRAIN_RANK" in '
              f'0) echo $$ > {first}.tmp; mv {first}.tmp {first}; sleep 0.3; '
              f'echo "error: DT_ERR_PEER_LOST: rank 1 left the job" >&2; exit 1;; '
              f'1) while [ ! -e {first} ]; do sleep 0.01; done; p=$(cat {first}); '
              f'while kill -0 $p 2>/dev/null; do sleep 0.01; done; exit 3;; '
              f'*) exec sleep 60;; esac')
    for _ in range(3):  # rank 1 may miss the launcher's quarter second on a loaded host
        first.unlink(missing_ok=True)
        r = run([disttrainrun, "-np", "3", "sh", "-c", script], timeout=30)
        assert r.returncode == 1, r.stderr  # the first failure's code, as before
        lines = summaries(r.stderr)
        if "ranks 1, 2 were stopped" in lines[-1]:
            continue
        assert re.fullmatch(r"disttrainrun: ranks 0 \(code 1\), 1 \(code 3\) exited with "
                            r"errors; the likely cause is rank 1 \(host localhost, pid \d+\): "
                            r"rank 0 reported a lost peer \(DT_ERR_PEER_LOST\); stopped the "
                            r"other ranks", lines[0]), r.stderr
        return
    pytest.fail(f"rank 1 was stopped in every try, never listed:\n{r.stderr}")


def test_rank_failing_beside_a_crash_is_listed(disttrainrun, tmp_path):
    # A crash (a signal) is named first; a rank that exited with an error before
    # disttrainrun stopped the job gets a line of its own.
    go, pidfile = tmp_path / "go", tmp_path / "pids"
    script = (f'echo $$ >> {pidfile}; case "$DISTTRAIN_RANK" in '
              f'0) sleep 0.3; touch {go}; kill -SEGV $$;; '
              f'1) while [ ! -e {go} ]; do sleep 0.01; done; exit 7;; '
              f'*) exec sleep 60;; esac')
    r = run([disttrainrun, "-np", "3", "sh", "-c", script], timeout=30)
    lines = summaries(r.stderr)
    assert r.returncode == 128 + 11, r.stderr
    assert re.fullmatch(r"disttrainrun: rank 0 \(host localhost, pid \d+\) was killed by "
                        r"signal 11 \(.*\); stopped the other ranks", lines[0]), r.stderr
    # Rank 1 is stopped at once with the others, or has exited 7 just before.
    assert lines[1:] in (
        ["disttrainrun: rank 1 (code 7) also exited with an error before disttrainrun "
         "stopped the job",
         "disttrainrun: rank 2 was stopped by disttrainrun with signal 15 (Terminated)"],
        ["disttrainrun: ranks 1, 2 were stopped by disttrainrun with signal 15 (Terminated)"],
    ), r.stderr
    assert_all_gone(pids_in(pidfile))


def test_rank_exiting_0_before_it_joins_fails_the_others_at_once(disttrainrun):
    # Rank 1 exits 0 without creating a context: the others, waiting for it in the
    # rendezvous, fail at once naming it (not after DISTTRAIN_TIMEOUT), as does the summary.
    worker = build_path("tests", "integration", "dt_contexts_worker")
    start = time.monotonic()
    r = run([disttrainrun, "-np", "3", worker, "skip-create"], timeout=60,
            env={"DISTTRAIN_TIMEOUT": "30"})
    elapsed = time.monotonic() - start
    assert r.returncode == 1, r.stdout + r.stderr
    told = "rank 1 exited with code 0 before it joined the job"
    for rank in (0, 2):
        assert any(line.startswith(f"[{rank}] error: dt_context_create: DT_ERR_PEER_LOST")
                   and told in line for line in r.stderr.splitlines()), r.stderr
    lines = summaries(r.stderr)
    assert re.fullmatch(r"disttrainrun: rank 1 \(host localhost, pid \d+\) exited with code 0 "
                        r"before it joined the job, where the others wait for it",
                        lines[0]), r.stderr
    # The others, failing on their own, are listed as such (or stopped, on a slow machine).
    assert all("also exited" in line or STOPPED_BY_US.fullmatch(line)
               for line in lines[1:]), r.stderr
    assert elapsed < 10, f"the others waited for rank 1 ({elapsed:.1f} s)"


def test_ranks_that_never_use_the_library_may_exit_0_at_any_time(disttrainrun):
    # Nobody joins: an early clean exit is no failure.
    r = run([disttrainrun, "-np", "2", "sh", "-c",
             '[ "$DISTTRAIN_RANK" = 1 ] && sleep 0.5; echo done'], timeout=30)
    assert r.returncode == 0, r.stderr
    assert sorted(r.stdout.splitlines()) == ["[0] done", "[1] done"]


def background_script(pidfile, then):
    """A rank that leaves a background child behind (its output away from our pipes), then
    runs `then`."""
    return (f'sleep 60 >/dev/null 2>&1 & echo $! >> {pidfile}; '
            f'echo $$ >> {pidfile}; {then}')


@pytest.mark.parametrize("outcome", ["success", "failure"])
def test_what_a_rank_leaves_running_ends_with_the_job(disttrainrun, tmp_path, outcome):
    # As Slurm ends a step's processes: a rank's background children are stopped when the
    # launcher ends, also those of a rank that exited on its own, and when the job succeeds.
    pidfile = tmp_path / "pids"
    then = ('exit 0' if outcome == "success" else
            'if [ "$DISTTRAIN_RANK" = 0 ]; then sleep 0.5; exit 4; fi; exec sleep 30')
    start = time.monotonic()
    r = run([disttrainrun, "-np", "2", "sh", "-c", background_script(pidfile, then)],
            timeout=30)
    assert r.returncode == (0 if outcome == "success" else 4), r.stderr
    assert time.monotonic() - start < 10
    assert len(pids_in(pidfile)) == 4
    assert_all_gone(pids_in(pidfile), within=1.0)


def test_leftover_ignoring_sigterm_is_killed_after_grace(disttrainrun, tmp_path):
    pidfile = tmp_path / "pids"
    # The child writes its pid once it ignores SIGTERM, and the rank exits only then: a
    # SIGTERM that came before the trap would end it at once, on a loaded host.
    child = f"sh -c 'trap \"\" TERM; echo $$ >> {pidfile}; while :; do sleep 0.1; done' " \
            ">/dev/null 2>&1 &"
    start = time.monotonic()
    r = run([disttrainrun, "-np", "1", "--grace", "0.5", "sh", "-c",
             f'{child} while [ ! -s {pidfile} ]; do sleep 0.05; done; exit 0'], timeout=30)
    elapsed = time.monotonic() - start
    assert r.returncode == 0, r.stderr
    assert 0.4 < elapsed < 8, elapsed
    assert_all_gone(pids_in(pidfile), within=1.0)


def test_rank_that_cannot_be_started_stops_the_job(disttrainrun, tmp_path):
    # Out of descriptors partway through starting the ranks: the ranks already started are
    # stopped as after any failure (SIGTERM, reaching their children), and the message
    # names the rank and the limit to raise.
    import resource
    pidfile = tmp_path / "pids"
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    limit = 40 if hard == resource.RLIM_INFINITY else min(40, hard)

    def low_limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))

    r = subprocess.run([str(disttrainrun), "-np", "30", "--bind-to", "none", "sh", "-c",
                        f'sleep 20 & echo $! >> {pidfile}; echo $$ >> {pidfile}; wait'],
                       env=clean_env(), capture_output=True, text=True, timeout=30,
                       preexec_fn=low_limit)
    assert r.returncode == 127, r.stderr
    lines = summaries(r.stderr)
    m = re.fullmatch(r"disttrainrun: rank (\d+) \(host localhost\) could not be started: "
                     r"cannot start 'sh': (pipe|open /dev/null) failed: Too many open files; "
                     r"disttrainrun "
                     r"needs about (\d+) open files for 30 rank\(s\), 3 a rank: raise its "
                     rf"limit \(now {limit}[^)]*\) with ulimit -n (\d+) or more, or start "
                     r"fewer ranks; stopped the other ranks", lines[0])
    assert m, r.stderr
    assert 0 < int(m.group(1)) < 30 and int(m.group(3)) >= 90
    assert re.fullmatch(r"disttrainrun: ranks? [0-9, -]+ (was|were) stopped by disttrainrun "
                        r"with signal 15 \(Terminated\)", lines[1]), r.stderr
    assert_all_gone(pids_in(pidfile))


@pytest.mark.parametrize("on_sigterm", ["dies", "ignores"])
def test_stopped_rank_is_ended_by_the_teardown(disttrainrun, tmp_path, on_sigterm):
    # Rank 1 and its child are SIGSTOPped; a stopped process acts on SIGTERM only once
    # continued, so the teardown sends SIGCONT with it (the rank ends at once, long
    # before the grace period), and SIGKILL after the grace for a rank that ignores it.
    pidfile = tmp_path / "pids"
    trap = 'trap "" TERM; ' if on_sigterm == "ignores" else ""
    grace = "30" if on_sigterm == "dies" else "1"
    script = (f'{trap}echo $$ >> {pidfile}; '
              f'if [ "$DISTTRAIN_RANK" = 0 ]; then sleep 0.5; exit 1; fi; '
              f'sleep 60 & echo $! >> {pidfile}; kill -STOP $! $$; wait')
    start = time.monotonic()
    r = run([disttrainrun, "-np", "2", "--grace", grace, "sh", "-c", script], timeout=60)
    elapsed = time.monotonic() - start
    assert r.returncode == 1, r.stderr
    assert elapsed < 10, f"the stopped rank was not ended promptly ({elapsed:.1f} s)"
    signal_text = "15 (Terminated)" if on_sigterm == "dies" else "9 (Killed)"
    assert summaries(r.stderr)[1:] == [
        f"disttrainrun: rank 1 was stopped by disttrainrun with signal {signal_text}"], r.stderr
    assert len(pids_in(pidfile)) == 3
    assert_all_gone(pids_in(pidfile))


def test_rank_ignoring_sigterm_is_killed_after_grace(disttrainrun, tmp_path):
    pidfile = tmp_path / "pids"
    script = ('trap "" TERM; echo $$ >> ' + str(pidfile) + '; '
              'if [ "$DISTTRAIN_RANK" = 0 ]; then sleep 0.3; exit 1; fi; '
              'while :; do sleep 0.1; done')
    start = time.monotonic()
    r = run([disttrainrun, "-np", "2", "--grace", "0.5", "sh", "-c", script], timeout=30)
    elapsed = time.monotonic() - start
    assert r.returncode == 1, r.stderr
    assert elapsed < 8, f"SIGKILL did not follow the grace period ({elapsed:.1f} s)"
    assert summaries(r.stderr)[1:] == [
        "disttrainrun: rank 1 was stopped by disttrainrun with signal 9 (Killed)"], r.stderr
    assert_all_gone(pids_in(pidfile))


def test_job_timeout_stops_all_ranks(disttrainrun, tmp_path):
    pidfile = tmp_path / "pids"
    r = run([disttrainrun, "-np", "2", "--timeout", "0.5", "--grace", "1",
             "sh", "-c", f"echo $$ >> {pidfile}; exec sleep 60"], timeout=30)
    assert r.returncode == 124, r.stderr
    assert summaries(r.stderr) == [
        "disttrainrun: the job did not finish within 0.5 s (--timeout); stopped all ranks",
        "disttrainrun: ranks 0, 1 were stopped by disttrainrun with signal 15 (Terminated)"]
    assert_all_gone(pids_in(pidfile))


def test_timeout_is_reported_as_given(disttrainrun):
    r = run([disttrainrun, "-np", "1", "--timeout", "0.0000001", "sleep", "5"], timeout=30)
    assert r.returncode == 124, r.stderr
    assert "did not finish within 1e-07 s (--timeout)" in r.stderr, r.stderr


# inherited: SIGINT's disposition the launcher starts with. A launcher started from a
# script's background job inherits it ignored, and its ranks must still act on the SIGINT
# it forwards (it resets the disposition for them).
@pytest.mark.parametrize("inherited", ["default", "ignored"])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_to_launcher_stops_all_ranks(disttrainrun, tmp_path, sig, inherited):
    pidfile = tmp_path / "pids"
    # The rank's shell and its child sleep both write their pids: the whole tree must go.
    # The trap comes first (single-quoted, so $! is read when it runs), so a signal sent
    # as soon as the pids are written cannot beat it.
    script = (f"trap 'kill $!; exit 0' INT; echo $$ >> {pidfile}; "
              f"sleep 60 & echo $! >> {pidfile}; wait")
    disposition = signal.SIG_IGN if inherited == "ignored" else signal.SIG_DFL
    proc = subprocess.Popen([str(disttrainrun), "-np", "3", "sh", "-c", script],
                            env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, disposition))
    try:
        wait_for_lines(pidfile, 6, proc)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 128 + sig, err
    line = first_failure(err)
    assert line.startswith(f"disttrainrun: received signal {int(sig)} ("), line
    assert line.endswith("; stopped all ranks")
    # SIGINT: the ranks' trap exits 0. SIGTERM: they die by it, as we forwarded it.
    assert summaries(err)[1:] == ([] if sig == signal.SIGINT else [
        "disttrainrun: ranks 0-2 were stopped by disttrainrun with signal 15 (Terminated)"])
    assert_all_gone(pids_in(pidfile))


# A reader that stops reading (a pager left open) fills the pipe of our stdout: the
# launcher must still act at once on a signal, --timeout and a failing rank. Told to stop
# (a signal, --timeout), it drops what the reader does not take within the drain limit;
# a failure alone stops the ranks at once and keeps the rest, its summary last, for the
# reader (a pager's reader reads on, and must see why the job failed).
@pytest.mark.parametrize("trigger", ["signal", "timeout", "failure"])
def test_blocked_stdout_does_not_stall_the_launcher(disttrainrun, tmp_path, trigger):
    pidfile = tmp_path / "pids"
    options = ["--grace", "1"] + (["--timeout", "1"] if trigger == "timeout" else [])
    fail = "[ $DISTTRAIN_RANK = 1 ] && { sleep 1; exit 3; }; " if trigger == "failure" else ""
    script = f"echo $$ >> {pidfile}; {fail}exec yes"
    read_end, write_end = os.pipe()  # never read until the end
    proc = subprocess.Popen([str(disttrainrun), "-np", "2", *options, "sh", "-c", script],
                            env=clean_env(), stdout=write_end, stderr=subprocess.PIPE,
                            text=True)
    os.close(write_end)
    try:
        wait_for_lines(pidfile, 2, proc)
        time.sleep(0.5)  # the pipe is full by now
        if trigger == "signal":
            proc.send_signal(signal.SIGTERM)
        if trigger == "failure":
            assert_all_gone(pids_in(pidfile), within=5.0)
            time.sleep(0.5)
            assert proc.poll() is None, "the launcher dropped output its reader had not read"
            threading.Thread(target=lambda: drain_fd(read_end), daemon=True).start()
        err = proc.communicate(timeout=5)[1]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        if trigger != "failure":
            os.close(read_end)
    code, cause = {"signal": (143, "received signal 15"),
                   "timeout": (124, "did not finish within 1 s"),
                   "failure": (3, "exited with code 3")}[trigger]
    assert proc.returncode == code, err
    assert cause in first_failure(err)
    assert_all_gone(pids_in(pidfile))


def drain_fd(fd):
    """Reads fd to its end, then closes it."""
    with os.fdopen(fd, "rb") as f:
        while f.read1(1 << 16):
            pass


def test_slow_reader_gets_all_output_in_order(disttrainrun):
    # More than the launcher queues (4 MiB) on each of stdout and stderr, read slowly:
    # nothing may be lost or reordered.
    count = 400000
    proc = subprocess.Popen([str(disttrainrun), "-np", "2", "sh", "-c",
                             f"seq 1 {count}; seq 1 {count} >&2"],
                            env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    got = {}

    def slow_read(name, stream):
        chunks = []
        while chunk := stream.read1(65536):
            chunks.append(chunk)
            time.sleep(0.01)
        got[name] = b"".join(chunks)

    readers = [threading.Thread(target=slow_read, args=(name, stream))
               for name, stream in (("out", proc.stdout), ("err", proc.stderr))]
    for t in readers:
        t.start()
    try:
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        for t in readers:
            t.join()
    expected = "".join(f"{i}\n" for i in range(1, count + 1)).encode()
    for name in ("out", "err"):
        lines = got[name].splitlines(keepends=True)
        for rank in (0, 1):
            tag = f"[{rank}] ".encode()
            mine = b"".join(line[len(tag):] for line in lines if line.startswith(tag))
            assert mine == expected, (name, rank)
        assert len(lines) == 2 * count, name


def test_launcher_started_with_sigchld_ignored(disttrainrun):
    # An ignored SIGCHLD has the kernel reap children unseen. The launcher must still see
    # its ranks end (it used to wait forever), and a rank its own child: Python's
    # subprocess reads a reaped child's status as 0, so exit 3 comes through only if the
    # rank started with SIGCHLD at its default.
    rank = ("import subprocess, sys; "
            "sys.exit(subprocess.call(['sh', '-c', 'sleep 0.2; exit 3']))")
    r = subprocess.run([str(disttrainrun), "-np", "2", sys.executable, "-c", rank],
                       env=clean_env(), capture_output=True, text=True, timeout=30,
                       preexec_fn=lambda: signal.signal(signal.SIGCHLD, signal.SIG_IGN))
    assert r.returncode == 3, r.stderr
    # Both ranks exit 3, alone ("exited with code 3") or together ("0-1 (code 3)").
    assert "exited with code 3" in r.stderr or "ranks 0-1 (code 3) exited" in r.stderr, \
        r.stderr


def test_hangup_under_nohup_leaves_the_job_running(disttrainrun, tmp_path):
    # nohup starts the launcher with SIGHUP ignored: a hangup then stops nothing (without
    # nohup it stops every rank, as SIGTERM does).
    pidfile = tmp_path / "pids"
    proc = subprocess.Popen([str(disttrainrun), "-np", "2", "sh", "-c",
                             f"echo $$ >> {pidfile}; sleep 1; exit 0"],
                            env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    try:
        wait_for_lines(pidfile, 2, proc)
        proc.send_signal(signal.SIGHUP)
        out, err = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err


def test_command_not_found(disttrainrun, tmp_path):
    marker = tmp_path / "started"
    r = run([disttrainrun, "-np", "2", "no-such-program-dt"], timeout=30)
    assert r.returncode == 127
    assert r.stderr.strip() == ("disttrainrun: cannot run 'no-such-program-dt': "
                                "No such file or directory")
    r = run([disttrainrun, "-np", "1", str(tmp_path / "missing")], timeout=30)
    assert r.returncode == 127
    assert "cannot run '" in r.stderr and "No such file or directory" in r.stderr
    script = tmp_path / "not-executable"
    script.write_text(f"#!/bin/sh\ntouch {marker}\n")
    r = run([disttrainrun, "-np", "1", str(script)], timeout=30)
    assert r.returncode == 127
    assert "Permission denied" in r.stderr, r.stderr
    assert not marker.exists()


def test_script_whose_interpreter_is_missing_is_explained(disttrainrun, tmp_path):
    crlf = tmp_path / "crlf.sh"
    crlf.write_bytes(b"#!/bin/sh\r\necho hi\r\n")
    crlf.chmod(0o755)
    r = run([disttrainrun, "-np", "2", str(crlf)], timeout=30)
    assert r.returncode == 127, r.stderr
    assert r.stderr == (
        f"disttrainrun: rank 0 (host localhost) could not be started: cannot run '{crlf}': "
        "No such file or directory; its #! line names the interpreter '/bin/sh\\r': the "
        "line ends in a carriage return (\\r), so the script has Windows (CRLF) line "
        f"endings; convert it with dos2unix {crlf} or sed -i 's/\\r$//' {crlf}\n")
    missing = tmp_path / "missing-interp.sh"
    missing.write_text("#!/nonexistent/interp -x\necho hi\n")
    missing.chmod(0o755)
    r = run([disttrainrun, "-np", "1", str(missing)], timeout=30)
    assert r.returncode == 127, r.stderr
    assert r.stderr == (
        f"disttrainrun: rank 0 (host localhost) could not be started: cannot run "
        f"'{missing}': No such file or directory; its #! line names the interpreter "
        "'/nonexistent/interp', which does not exist\n")


@pytest.mark.parametrize("value, why", [
    ("[::1", "has '[' without a matching ']'"),
    ("[", "has '[' without a matching ']'"),
    ("[]", "has no host"),
    ("[]:5000", "has no host"),
    ("[::1]x", "has no port after ']'"),
    (":5000", "has no host"),
])
def test_bad_store_address_fails_at_once(disttrainrun, tmp_path, value, why):
    marker = tmp_path / "started"
    r = run([disttrainrun, "-np", "2", "touch", str(marker)], timeout=30,
            env={"DISTTRAIN_STORE_ADDR": value})
    assert r.returncode == 1, r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith(f"disttrainrun: DISTTRAIN_STORE_ADDR='{value}' {why}; "
                               "expected "), r.stderr
    assert not marker.exists()


def test_nested_launcher_names_the_inherited_store_address(disttrainrun):
    # A rank that runs disttrainrun inherits the job's DISTTRAIN_STORE_ADDR, whose port
    # the outer launcher's store holds.
    r = run([disttrainrun, "-np", "1", disttrainrun, "-np", "2", "true"], timeout=30)
    assert r.returncode == 1, r.stderr
    inner = [l for l in r.stderr.splitlines() if l.startswith("[0] disttrainrun: ")]
    assert len(inner) == 1, r.stderr
    assert re.fullmatch(
        r"\[0\] disttrainrun: the rendezvous store cannot listen on 127\.0\.0\.1:\d+: .*; "
        r"this address comes from DISTTRAIN_STORE_ADDR=127\.0\.0\.1:\d+, inherited from an "
        r"enclosing disttrainrun job \(DISTTRAIN_RANK is set too\): unset it \(env -u "
        r"DISTTRAIN_STORE_ADDR disttrainrun \.\.\.\) to let disttrainrun choose a free "
        r"port, or set it to a free address", inner[0]), r.stderr
    # Unset, the inner job runs.
    r = run([disttrainrun, "-np", "1", "env", "-u", "DISTTRAIN_STORE_ADDR", disttrainrun,
             "-np", "2", "true"], timeout=30)
    assert r.returncode == 0, r.stderr


# --- arguments and hosts checked before anything starts ---------------------------------

@pytest.mark.parametrize("args, message", [
    ([], "-np is required"),
    (["TOUCH"], "-np is required"),
    (["-np", "0", "TOUCH"], "-np needs a positive number of ranks, got '0'"),
    (["-np", "-2", "TOUCH"], "-np needs a positive number of ranks, got '-2'"),
    (["-np", "two", "TOUCH"], "-np needs a positive number of ranks, got 'two'"),
    (["-np", "99999999", "TOUCH"], "-np 99999999 is more ranks than the 1048576 a job may have"),
    (["-np", "1000000000", "TOUCH"],
     "-np 1000000000 is more ranks than the 1048576 a job may have"),
    (["-np"], "-np needs a value"),
    (["-np", "2"], "no command given"),
    (["-np", "2", "--"], "no command given"),
    (["-np", "3", "-H", "localhost:2", "TOUCH"],
     "-np 3 asks for more ranks than the 2 slots"),
    (["-np", "1", "-H", "localhost:", "TOUCH"], "bad slot count"),
    (["-np", "1", "-H", "localhost:0", "TOUCH"], "bad slot count"),
    (["-np", "1", "-H", "localhost:x2", "TOUCH"], "bad slot count"),
    (["-np", "1", "-H", "localhost:1,,b:1", "TOUCH"], "empty entry"),
    (["-np", "1", "-H", ":2", "TOUCH"], "has no host name"),
    (["-np", "1", "-H", "a:1,a:1", "TOUCH"], "lists host 'a' twice"),
    (["-np", "1", "--launcher", "pbs", "TOUCH"], "--launcher must be 'local', 'ssh' or 'mpi'"),
    (["-np", "1", "--launcher", "local", "-H", "farhost:1", "TOUCH"],
     "--launcher local cannot start ranks on remote host 'farhost'"),
    (["-np", "1", "--grace", "-1", "TOUCH"], "--grace needs a number of seconds"),
    (["-np", "1", "--timeout", "soon", "TOUCH"], "--timeout needs a number of seconds"),
    (["-np", "1", "--frobnicate", "TOUCH"], "unknown option '--frobnicate'"),
    (["-np", "1", "--bind-to", "socket", "TOUCH"],
     "--bind-to 'socket': expected core, none or auto"),
    (["-np", "1", "-H", "a:1", "--hostfile", "/dev/null", "TOUCH"],
     "-H and --hostfile both give the hosts; use one of them"),
    (["-np", "1", "--hostfile", "/nonexistent/hosts", "TOUCH"],
     "cannot read hostfile /nonexistent/hosts: No such file or directory"),
    (["-np", "1", "--hostfile", "/dev/null", "TOUCH"], "hostfile /dev/null lists no hosts"),
    (["-np", "1", "--hostfile", "/tmp", "TOUCH"], "hostfile /tmp is a directory"),
    (["-np", "1", "-H", "localhost:1:2", "TOUCH"],
     "-H entry 'localhost:1:2' is not a host name or IP address"),
    # mpirun, which gets --oversubscribe, would run 3 ranks on the 2 slots.
    (["-np", "3", "--launcher", "mpi", "-H", "localhost:2", "TOUCH"],
     "-np 3 asks for more ranks than the 2 slots in -H localhost:2"),
    (["-np", "1", "-x", "2BAD", "TOUCH"], "-x needs VAR or VAR=VALUE"),
    (["-np", "1", "-x", "DISTTRAIN_JOB_TOKEN=x", "TOUCH"],
     "-x cannot set DISTTRAIN_JOB_TOKEN: disttrainrun sets it for each rank"),
    (["-np", "1", "--ssh-port", "70000", "TOUCH"],
     "--ssh-port needs a port number from 1 to 65535, got '70000'"),
    (["-np", "1", "--ssh-identity", "/nonexistent/key", "TOUCH"],
     "--ssh-identity /nonexistent/key: cannot read it: No such file or directory"),
    # A single-valued option given twice: which one was meant is not ours to guess.
    (["-np", "2", "-np", "3", "TOUCH"], "-np is given twice; give it once"),
    (["-np", "2", "-n", "3", "TOUCH"], "-n is given twice (also as -np); give it once"),
    (["-np", "1", "--timeout", "5", "--timeout=9", "TOUCH"],
     "--timeout is given twice; give it once"),
    (["-np", "1", "--hostfile", "/dev/null", "-hostfile", "/dev/null", "TOUCH"],
     "-hostfile is given twice (also as --hostfile); give it once"),
])
def test_bad_arguments(disttrainrun, tmp_path, args, message):
    marker = tmp_path / "started"
    args = [a if a != "TOUCH" else "touch" for a in args]
    if "touch" in args:
        args.append(str(marker))
    r = run([disttrainrun] + args, timeout=30)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert r.stdout == ""
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("disttrainrun: "), r.stderr
    assert message in lines[0], lines[0]
    assert not marker.exists()


def test_help(disttrainrun):
    r = run([disttrainrun, "--help"], timeout=30)
    assert r.returncode == 0
    assert "usage: disttrainrun -np N" in r.stdout
    for option in ("-np N, -n N, --np N", "--hostfile FILE", "-x VAR[=VALUE]",
                   "--ssh-port PORT", "--ssh-identity FILE", "--version"):
        assert option in r.stdout, option


def test_command_options_are_not_taken_as_ours(disttrainrun):
    r = run([disttrainrun, "-np", "1", "sh", "-c", 'echo "$@"', "sh", "-np", "5", "--help"],
            timeout=30)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "[0] -np 5 --help\n"


@pytest.mark.skipif(shutil.which("ssh") is None, reason="ssh client not installed")
def test_unreachable_host_fails_before_anything_starts(disttrainrun, tmp_path):
    marker = tmp_path / "started"
    r = run([disttrainrun, "-np", "2", "-H", "localhost:1,nonexistent-host.invalid:1",
             "touch", str(marker)], timeout=60)
    assert r.returncode != 0
    lines = r.stderr.splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("disttrainrun: cannot reach host 'nonexistent-host.invalid' "
                               "over ssh: "), lines[0]
    assert lines[0].endswith("; check that passwordless ssh works "
                             "(ssh -o BatchMode=yes nonexistent-host.invalid true)"), lines[0]
    assert not marker.exists()


def test_every_unreachable_host_is_named(disttrainrun, fake_ssh, tmp_path):
    env, log = fake_ssh
    marker = tmp_path / "started"
    r = run([disttrainrun, "-np", "3", "-H", "down-a:1,nodeB:1,down-c:1",
             "touch", str(marker)], env=env, timeout=30)
    assert r.returncode != 0
    lines = r.stderr.splitlines()
    assert [l.split("'")[1] for l in lines] == ["down-a", "down-c"], r.stderr
    assert "ssh: connect to host down-a port 22: Connection refused" in lines[0]
    assert not marker.exists()
    # Only the reachability check ran on the good host.
    assert log.read_text().split() == ["nodeB"]


def test_local_failure_stops_remote_ranks(disttrainrun, fake_ssh, tmp_path):
    env, _ = fake_ssh
    env["FAKE_SSH_DETACH"] = "1"  # remote ranks are out of reach of our signals
    pidfile = tmp_path / "pids"
    start = time.monotonic()
    r = run([disttrainrun, "-np", "3", "-H", "localhost:1,nodeA:2", "sh", "-c",
             sleeping_ranks_script(pidfile, 0, "exit 3")], env=env, timeout=30)
    assert r.returncode == 3, r.stderr
    assert time.monotonic() - start < 10
    assert first_failure(r.stderr).startswith("disttrainrun: rank 0 (host localhost")
    assert len(pids_in(pidfile)) == 3
    assert_all_gone(pids_in(pidfile))


def test_remote_rank_failure_is_reported_with_its_host(disttrainrun, fake_ssh):
    env, _ = fake_ssh
    r = run([disttrainrun, "-np", "2", "-H", "localhost:1,nodeA:1", "sh", "-c",
             'if [ "$DISTTRAIN_RANK" = 1 ]; then exit 6; fi; exec sleep 60'],
            env=env, timeout=30)
    assert r.returncode == 6, r.stderr
    assert re.fullmatch(r"disttrainrun: rank 1 \(host nodeA, ssh pid \d+\) exited with "
                        r"code 6; stopped the other ranks", first_failure(r.stderr)), r.stderr


# --- CPU binding ----------------------------------------------------------------------

PRINT_AFFINITY = "import os; print(*sorted(os.sched_getaffinity(0)))"


def physical_cores(cpus):
    """The cores (package, core id) of these CPUs, as the launcher groups them."""
    cores = set()
    for cpu in cpus:
        topo = pathlib.Path(f"/sys/devices/system/cpu/cpu{cpu}/topology")
        try:
            cores.add((int((topo / "physical_package_id").read_text()),
                       int((topo / "core_id").read_text())))
        except (OSError, ValueError):
            cores.add(("cpu", cpu))
    return cores


def affinities(disttrainrun, np, *options):
    r = run([disttrainrun, "-np", str(np), *options, sys.executable, "-c", PRINT_AFFINITY],
            timeout=60)
    assert r.returncode == 0, r.stderr
    found = {}
    for line in r.stdout.splitlines():
        m = re.match(r"\[(\d+)\] ([\d ]+)$", line)
        assert m, line
        found[int(m.group(1))] = set(map(int, m.group(2).split()))
    assert sorted(found) == list(range(np)), r.stdout
    return found


@pytest.mark.parametrize("options", [(), ("--bind-to", "core")], ids=["default", "core"])
def test_ranks_that_fit_get_cores_of_their_own(disttrainrun, options):
    mine = os.sched_getaffinity(0)
    if len(physical_cores(mine)) < 2:
        pytest.skip("fewer than 2 physical cores in this process's affinity mask")
    got = affinities(disttrainrun, 2, *options)
    assert got[0] and got[1] and not got[0] & got[1], got
    # Every allowed CPU is dealt out, whole cores to one rank each.
    assert got[0] | got[1] == mine, got
    assert not physical_cores(got[0]) & physical_cores(got[1]), got


def test_bind_to_none_leaves_every_cpu_to_every_rank(disttrainrun):
    mine = os.sched_getaffinity(0)
    assert affinities(disttrainrun, 2, "--bind-to", "none") == {0: mine, 1: mine}


def test_more_ranks_than_cores_are_not_bound_by_default(disttrainrun):
    mine = os.sched_getaffinity(0)
    np = len(mine) + 1
    assert affinities(disttrainrun, np) == {r: mine for r in range(np)}


def test_bind_to_core_with_more_ranks_than_cores_is_an_error(disttrainrun, tmp_path):
    np = len(os.sched_getaffinity(0)) + 1
    marker = tmp_path / "started"
    r = run([disttrainrun, "-np", str(np), "--bind-to", "core", "touch", str(marker)],
            timeout=30)
    assert r.returncode == 2, r.stderr
    assert f"--bind-to core: {np} ranks on this host" in r.stderr, r.stderr
    assert "--bind-to none" in r.stderr, r.stderr
    assert not marker.exists()
