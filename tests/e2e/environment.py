"""The environment between `tally collect` and the collector in every process it follows.

- bash subshells and command substitutions work and are recorded (the collector once pointed an
  environ entry at its own buffer in fork children, and bash freed it);
- a launcher chain (a bash script that execs Python, which runs a command) runs and is recorded;
- the program sees exactly its own environment, apart from LD_PRELOAD and TALLY_SETTINGS, in the
  root and in every descendant (fork, execle, posix_spawn, vfork + execve, system);
- every exec and spawn call and the loader's dlopen, dlmopen and dlclose work as without tally and
  are recorded (each new image followed, the plugin's load and unload logged);
- every setting reaches every descendant: each descendant's settings record equals the root's,
  with non-default values for every setting (through the driver and through TALLY_SETTINGS
  written here, independently of the driver);
- near the kernel's limit on arguments and environment (E2BIG): the driver says that tally's
  additions are the cause, and an exec in a descendant still works (without tally) and is logged;
- a statically linked program is named as such.
`environment.py setuid`: a set-user-ID copy of a program is named as such (skipped, exit 77, when
the test cannot make or run one: not root, or a nosuid file system).
"""
import os
import shutil
import stat
import subprocess
import sys
from urllib.parse import unquote

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import TALLY, WL, check, done, fail, log_records, skip, workdir  # noqa: E402

LIB = os.path.join(os.path.dirname(os.path.abspath(TALLY)), "libtally-collector.so")
OURS = ("LD_PRELOAD=", "TALLY_SETTINGS=")


def wl(name):
    return os.path.join(WL, "wl_" + name)


def collect(d, name, args, opts=(), env=None):
    p = subprocess.run([TALLY, "collect", "-A", "off", "-d", d, "-o", name] + list(opts) +
                       list(args), capture_output=True, text=True, timeout=240, env=env)
    return p, os.path.join(d, name + ".tally")


def experiments(root):
    """Every experiment directory under root (root included)."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        if "log" in filenames:
            out.append(dirpath)
    return sorted(out)


def start_exe(exp):
    recs = log_records(exp, "start")
    return recs[0][1].get("exe", "") if recs else ""


def settings(exp):
    recs = log_records(exp, "settings")
    return recs[-1][1] if recs else None


def warnings(exp):
    return [unquote(f.get("what", "")) for _, f in log_records(exp, "warning")]


def strip_ours(lines):
    return [x for x in lines if not x.startswith(OURS)]


# ---- bash and launchers ---------------------------------------------------------------------

def test_bash(d):
    cmd = 'x=$(/bin/echo hi); echo "x=[$x]"; (/bin/echo sub)'
    p, exp = collect(d, "bash", ["bash", "-c", cmd])
    check(p.returncode == 0 and p.stdout == "x=[hi]\nsub\n",
          "bash under tally: status %d, stdout %r, stderr %r" % (p.returncode, p.stdout,
                                                                 p.stderr[-600:]))
    echoes = [e for e in experiments(exp) if start_exe(e).endswith("/echo")]
    check(len(echoes) == 2, "bash: %d experiments of /bin/echo (subshell children), expected 2: "
          "%s" % (len(echoes), experiments(exp)))
    for e in echoes:
        end = log_records(e, "end")
        check(end and end[-1][1].get("how") == "exit" and end[-1][1].get("status") == "0",
              "bash: %s did not end with exit 0" % e)


def test_launcher(d):
    script = os.path.join(d, "launch.sh")
    with open(script, "w") as f:
        f.write("#!/bin/bash\n"
                "# a launcher: a bash script that execs python3, which runs a command\n"
                "exec python3 -c 'import subprocess, sys; r = subprocess.run([\"/bin/echo\", "
                "\"from-python\"]); print(\"child\", r.returncode); sys.exit(3)' \"$@\"\n")
    os.chmod(script, 0o755)
    bare = subprocess.run([script], capture_output=True, text=True, timeout=120)
    p, exp = collect(d, "launch", [script])
    check(p.returncode == bare.returncode == 3 and p.stdout == bare.stdout ==
          "from-python\nchild 0\n", "launcher: status %d (bare %d), stdout %r (bare %r), stderr %r"
          % (p.returncode, bare.returncode, p.stdout, bare.stdout, p.stderr[-600:]))
    exes = [start_exe(e) for e in experiments(exp)]
    check(any("python" in os.path.basename(x) for x in exes) and
          any(x.endswith("/echo") for x in exes),
          "launcher: no experiment of python3 and of echo among %s" % exes)


# ---- the program's own environment ----------------------------------------------------------

def test_environment(d):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env["ENV_TEST_VALUE"] = "a b,c%d=e"
    bare = subprocess.run(["env"], capture_output=True, text=True, env=env, timeout=60)
    p, _ = collect(d, "env", ["env"], env=env)
    check(p.returncode == 0 and strip_ours(p.stdout.splitlines()) == bare.stdout.splitlines(),
          "env under tally differs from env without it (apart from LD_PRELOAD and "
          "TALLY_SETTINGS):\n%s\nvs\n%s" % (p.stdout, bare.stdout))
    added = [x for x in p.stdout.splitlines() if x.startswith(OURS)]
    check(len(added) == 2, "tally added more than LD_PRELOAD and TALLY_SETTINGS: %s" % added)
    settings_var = [x for x in added if x.startswith("TALLY_SETTINGS=")]
    check(settings_var and len(settings_var[0]) < 200 + len(d),
          "TALLY_SETTINGS is not compact: %s" % settings_var)

    bare = subprocess.run(["bash", "-c", "(env)"], capture_output=True, text=True, env=env,
                          timeout=60)
    p, _ = collect(d, "subenv", ["bash", "-c", "(env)"], env=env)
    check(p.returncode == 0 and strip_ours(p.stdout.splitlines()) == bare.stdout.splitlines(),
          "env in a bash subshell under tally differs:\n%s\nvs\n%s" % (p.stdout, bare.stdout))

    bare = subprocess.run([wl("envdesc")], capture_output=True, text=True, env=env, timeout=60)
    p, exp = collect(d, "envdesc", [wl("envdesc")], env=env)
    check(p.returncode == 0 and p.stdout == bare.stdout,
          "envdesc: the environments seen under tally differ:\n%s\nvs bare:\n%s\n%s" %
          (p.stdout, bare.stdout, p.stderr[-600:]))
    check("fork child: environ unchanged" in bare.stdout and
          "fork=0 execle=0 spawn=0 vfork=0 system=0" in bare.stdout, "envdesc: %r" % bare.stdout)
    kinds = sorted(f["kind"] for e in experiments(exp) for _, f in log_records(e, "descendant"))
    # system(): its shell is a spawn, and the shell (dash) vforks and execs the command
    check(kinds == ["exec", "fork", "fork", "spawn", "spawn", "spawn", "spawn"],
          "envdesc: descendants %s" % kinds)


def test_launchers(d):
    """Every exec and spawn call the collector interposes (execl, execlp, execv, execvp, execvpe,
    execle, fexecve after a fork; posix_spawn, posix_spawnp) and dlopen, dlmopen, dlclose: the
    program's output is the same as without tally, every new image is followed, and the plugin's
    load and unload are logged."""
    plugin = os.path.join(WL, "libwl_plugin.so")
    bare = subprocess.run([wl("launchers"), plugin], capture_output=True, text=True, timeout=60)
    check(bare.returncode == 0 and "status=0" in bare.stdout and "LAUNCHER=own" in bare.stdout,
          "launchers bare: %r %r" % (bare.stdout, bare.stderr))
    p, exp = collect(d, "launchers", [wl("launchers"), plugin])
    check(p.returncode == 0 and p.stdout == bare.stdout,
          "launchers: the output under tally differs:\n%s\nvs bare:\n%s\n%s" %
          (p.stdout, bare.stdout, p.stderr[-600:]))
    exps = experiments(exp)
    kinds = sorted(f["kind"] for e in exps for _, f in log_records(e, "descendant"))
    check(kinds == ["exec"] * 7 + ["fork"] * 7 + ["spawn"] * 2,
          "launchers: descendants %s" % kinds)
    check(len(exps) == 17, "launchers: %d experiments, expected 17 (the root, 7 forks, the 7 images "
          "they exec, 2 spawns)" % len(exps))
    for e in exps:
        check(os.path.basename(start_exe(e)) == "wl_launchers",
              "launchers: %s runs %r" % (e, start_exe(e)))
    loads = [f for _, f in log_records(exp, "load") if "wl_plugin" in unquote(f.get("path", ""))]
    unloads = [f["id"] for _, f in log_records(exp, "unload")]
    check(len(loads) == 1 and loads[0]["id"] in unloads,
          "launchers: plugin loads %s, unloads %s" % (loads, unloads))


# ---- every setting reaches every descendant -------------------------------------------------

def check_settings_everywhere(exp, what, expect, ignore=()):
    def settings_but(e):
        s = settings(e)
        return s and {k: v for k, v in s.items() if k not in ignore}
    root = settings_but(exp)
    if not check(root is not None, "%s: no settings record in the root" % what):
        return
    for k, v in expect.items():
        check(root.get(k) == v, "%s: root setting %s=%s, expected %s" % (what, k, root.get(k), v))
    exps = experiments(exp)
    check(len(exps) == 8, "%s: %d experiments, expected 8 (root, 2 forks, the exec after one, "
          "posix_spawn, vfork, system's shell and its command): %s" % (what, len(exps), exps))
    for e in exps[1:]:
        s = settings_but(e)
        check(s == root, "%s: %s has settings %s, the root %s" % (what, e, s, root))


def test_settings(d):
    opts = ["-p", "20", "-t", "0-100", "--max-depth=77", "-S", "off", "-l", "USR1", "-y", "USR2",
            "-s", "50", "-H", "on", "-i", "on"]
    p, exp = collect(d, "settings", [wl("envdesc")], opts)
    check(p.returncode == 0 and "system=0" in p.stdout, "settings run: %r %r" % (p.stdout,
                                                                               p.stderr[-600:]))
    check_settings_everywhere(exp, "collect " + " ".join(opts), {
        "clock": "20000000", "duration": "0-100000000000", "max_depth": "77", "sample": "0",
        "states": "20000000", "sample_signal": "10", "pause_signal": "12", "sync": "50000",
        "heap": "on", "io": "on", "follow": "on", "start_paused": "on"})

    # the variable written here (the collector's contract), with what the driver cannot set
    exp = os.path.join(d, "direct")
    os.makedirs(exp)
    env = dict(os.environ)
    env.update({"T_SET": "d=%s,p=3000000,g=58,T=on,t=5-,m=99,s=on,H=on,S=500000000,st=30000000"
                "".replace("%s", exp.replace("%", "%25").replace(",", "%2C")) + ",l=10",
                "T_PRELOAD": LIB})
    script = ('export TALLY_SETTINGS="$T_SET,r=$$,o=$$" LD_PRELOAD="$T_PRELOAD"; '
              'unset T_SET T_PRELOAD; exec "$@"')
    p = subprocess.run(["sh", "-c", script, "sh", wl("envdesc")], capture_output=True, text=True,
                       env=env, timeout=120)
    check(p.returncode == 0 and "system=0" in p.stdout, "direct run: %r %r" % (p.stdout,
                                                                             p.stderr[-600:]))
    # sync=on is calibrated in each process: its threshold differs, the rest must not
    for e in experiments(exp):
        check((settings(e) or {}).get("sync_calibrated") == "1",
              "direct: %s sync not calibrated" % e)
    check_settings_everywhere(exp, "TALLY_SETTINGS", {
        "clock": "3000000", "clock_signal": "58", "clock_timer": "on",
        "clock_source": "cputime-timer", "duration": "5-", "max_depth": "99", "heap": "on",
        "sample": "500000000", "states": "30000000", "sample_signal": "10"},
        ignore=("sync", "sync_calibration"))

    # a bad variable is refused with its name, and the program runs as without tally
    env = dict(os.environ)
    env.update({"TALLY_SETTINGS": "d=%s,r=1,m=0" % exp, "LD_PRELOAD": LIB})
    p = subprocess.run(["/bin/echo", "ok"], capture_output=True, text=True, env=env, timeout=60)
    check(p.returncode == 0 and p.stdout == "ok\n" and "bad setting 'm=0'" in p.stderr,
          "bad TALLY_SETTINGS: %r %r" % (p.stdout, p.stderr))


# ---- E2BIG ------------------------------------------------------------------------------------

def args_of(total):
    out, left = [], total
    while left:
        n = min(left, 100000)
        out.append("a" * n)
        left -= n
    return out


def fits(prog, total, env):
    try:
        subprocess.run([prog] + args_of(total), env=env, capture_output=True, timeout=60)
        return True
    except OSError as e:
        if e.errno == 7:  # E2BIG
            return False
        raise


def largest(prog, env):
    lo, hi = 0, 8 << 20
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(prog, mid, env):
            lo = mid
        else:
            hi = mid - 1
    return lo


def test_e2big(d):
    true = shutil.which("true")
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    top = largest(true, env)
    check(top > 100000, "E2BIG: largest argument total %d" % top)
    # the driver's own exec takes these more; what tally adds is more than that (the experiment's
    # absolute path is long, and given to the driver as the working directory, not an argument)
    wd = os.path.join(d, "x" * 200, "y" * 200)
    os.makedirs(wd)
    pre = [TALLY, "collect", "-A", "off", "-o", "big"]
    extra = sum(len(a) + 1 + 8 for a in pre) + len(TALLY) - len(true) + 16
    total = top - extra
    check(fits(true, total, env), "E2BIG: %d bytes of arguments do not fit without tally" % total)
    try:
        p = subprocess.run(pre + [true] + args_of(total), capture_output=True, text=True,
                           env=env, timeout=120, cwd=wd)
    except OSError as e:
        fail("E2BIG: the driver itself could not start: %s" % e)
        return
    check(p.returncode != 0 and "because of what tally adds to the environment" in p.stderr and
          "TALLY_SETTINGS" in p.stderr and "Traceback" not in p.stderr,
          "E2BIG: driver status %d, stderr %r" % (p.returncode, p.stderr[-800:]))
    check(not os.path.exists(os.path.join(wd, "big.tally")), "E2BIG: an empty experiment is left")

    # an exec in a descendant: too long with tally's additions, fine without them
    top = largest(true, {"X": "1"})
    bare = subprocess.run([wl("bigexec"), str(top), true], capture_output=True, text=True,
                          timeout=60)
    check(bare.returncode == 0, "bigexec bare: %d %r" % (bare.returncode, bare.stdout))
    p, exp = collect(d, "bigexec", [wl("bigexec"), str(top), true])
    check(p.returncode == 0 and p.stdout == "",
          "bigexec under tally: status %d, %r %r" % (p.returncode, p.stdout, p.stderr[-600:]))
    check(any("not followed" in w and "E2BIG" in w for w in warnings(exp)),
          "bigexec: no warning of the descendant not followed (E2BIG) in %s" % warnings(exp))


# ---- programs the collector cannot enter ------------------------------------------------------

def test_static(d):
    p, exp = collect(d, "static", [wl("static_hello")])
    check(p.returncode == 0 and p.stdout == "hello\n", "static: %r" % p.stdout)
    check("statically linked" in p.stderr and "a statically linked program?" not in p.stderr,
          "static: stderr %r" % p.stderr)
    check(any("statically linked" in w for w in warnings(exp)),
          "static: the log does not say why nothing was recorded")


def test_setuid():
    if os.geteuid() != 0:
        skip("making a set-user-ID program for another user needs root")
    d = workdir("environment-setuid")
    vfs = os.statvfs(d)
    if vfs.f_flag & os.ST_NOSUID:
        shutil.rmtree(d, ignore_errors=True)
        skip("%s is on a nosuid file system" % d)
    os.chmod(d, 0o755)
    prog = os.path.join(d, "suid_hello")
    shutil.copy(wl("cpu_single"), prog)
    os.chown(prog, 65534, 65534)  # nobody: the program then runs with other rights than ours
    os.chmod(prog, 0o755 | stat.S_ISUID)
    bare = subprocess.run([prog, "0.05"], capture_output=True, text=True, timeout=60)
    p, exp = collect(d, "suid", [prog, "0.05"])
    check(p.returncode == bare.returncode, "setuid: status %d vs bare %d" % (p.returncode,
                                                                            bare.returncode))
    check("set-user-ID" in p.stderr and "secure-execution" in p.stderr and
          "LD_PRELOAD" in p.stderr and "statically linked" not in p.stderr,
          "setuid: stderr %r" % p.stderr)
    check(any("set-user-ID" in w for w in warnings(exp)), "setuid: the log does not say why")
    done(d)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "setuid":
        test_setuid()
        return
    d = workdir("environment")
    for t in (test_bash, test_launcher, test_environment, test_launchers, test_settings,
              test_e2big, test_static):
        t(d)
    done(d)


main()
