# SPDX-License-Identifier: MIT
"""Real servers for the backend tests, started privately and stopped at the
end: a Docker engine (dockerd on its own socket, data root and exec root
under a temp dir, no bridge, no iptables) with a small image imported from a
local busybox rootfs (no registry), and an sshd on a loopback port with a
generated host key, one authorized key and a known_hosts file.

Nothing is installed here (scripts/install-deps does that). A server that
cannot start raises Unavailable with the reason; the caller reports SKIP
loudly (and fails under VECTORA_TEST_STRICT=1).

Python 3 stdlib only."""

import os
import pwd
import shutil
import signal
import socket
import subprocess
import tarfile
import time

# The sshd login user when the tests run as root (scripts/install-deps
# creates it); run as a normal user, sshd runs as that user and logs it in.
SSH_TEST_USER = "vectora-ssh"


class Unavailable(Exception):
    pass


def _which(name, extra=("/usr/sbin", "/sbin", "/usr/bin")):
    p = shutil.which(name)
    if p:
        return p
    for d in extra:
        if os.access(os.path.join(d, name), os.X_OK):
            return os.path.join(d, name)
    return None


def _tail(path, n=1500):
    try:
        with open(path, errors="replace") as f:
            return f.read()[-n:]
    except OSError:
        return ""


def busybox_rootfs(tmp):
    """A small image from busybox-static: /bin with every applet, /etc
    with passwd and group, empty mount points."""
    busybox = _which("busybox", ("/bin", "/usr/bin"))
    if not busybox:
        raise Unavailable("busybox not installed (scripts/install-deps installs busybox-static)")
    r = subprocess.run(["file", "-L", busybox], capture_output=True, text=True) if shutil.which("file") else None
    if r and "dynamically" in r.stdout:
        raise Unavailable("busybox is not static (install busybox-static)")
    tar = os.path.join(tmp, "rootfs.tar")
    applets = subprocess.run([busybox, "--list"], capture_output=True, text=True).stdout.split()
    with tarfile.open(tar, "w") as t:
        def add_dir(path, mode=0o755):
            ti = tarfile.TarInfo(path)
            ti.type, ti.mode = tarfile.DIRTYPE, mode
            t.addfile(ti)
        for d in ("bin", "etc", "tmp", "proc", "dev", "sys", "run", "home", "usr", "root"):
            add_dir(d, 0o1777 if d == "tmp" else 0o755)
        t.add(busybox, "bin/busybox")
        for a in applets:
            if a != "busybox":
                ti = tarfile.TarInfo("bin/" + a)
                ti.type, ti.linkname = tarfile.SYMTYPE, "busybox"
                t.addfile(ti)
        ti = tarfile.TarInfo("usr/bin")
        ti.type, ti.linkname = tarfile.SYMTYPE, "../bin"
        t.addfile(ti)
        for fname, text in (("etc/passwd", "root:x:0:0::/root:/bin/sh\nnobody:x:65534:65534::/nonexistent:/bin/sh\n"),
                            ("etc/group", "root:x:0:\nnogroup:x:65534:\n")):
            data = text.encode()
            ti = tarfile.TarInfo(fname)
            ti.size, ti.mode = len(data), 0o644
            import io
            t.addfile(ti, io.BytesIO(data))
    return tar


class DockerEngine:
    """dockerd on unix://TMP/docker.sock. .host is the DOCKER_HOST value."""

    def __init__(self, tmp, timeout=40):
        self.dir = os.path.join(tmp, "docker")
        os.makedirs(self.dir, exist_ok=True)
        self.sock = os.path.join(self.dir, "docker.sock")
        self.host = "unix://" + self.sock
        self.log = os.path.join(self.dir, "dockerd.log")
        self.proc = None
        dockerd = _which("dockerd")
        self.docker = _which("docker")
        if not dockerd or not self.docker:
            raise Unavailable("dockerd/docker not installed (scripts/install-deps installs docker.io)")
        if os.geteuid() != 0:
            raise Unavailable("dockerd needs root here (rootless docker is not set up by the harness)")
        cmd = [dockerd, "--host", self.host, "--data-root", os.path.join(self.dir, "data"),
               "--exec-root", os.path.join(self.dir, "exec"), "--pidfile", os.path.join(self.dir, "dockerd.pid"),
               "--bridge", "none", "--iptables=false", "--ip6tables=false", "--ip-masq=false",
               "--userland-proxy=false", "--containerd-namespace", "vectora-test",
               "--containerd-plugins-namespace", "vectora-test-plugins", "--log-level", "warn"]
        with open(self.log, "w") as lf:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=lf, stderr=lf, start_new_session=True)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise Unavailable("dockerd exited at start: " + _tail(self.log))
            if os.path.exists(self.sock) and self.run(["info", "--format", "{{.ServerVersion}}"],
                                                         check=False).returncode == 0:
                return
            time.sleep(0.2)
        self.stop()
        raise Unavailable("dockerd did not answer within %d s: %s" % (timeout, _tail(self.log)))

    def run(self, args, check=True, **kw):
        r = subprocess.run([self.docker, "--host", self.host] + args, capture_output=True, text=True, **kw)
        if check and r.returncode != 0:
            raise RuntimeError("docker %s: %s" % (" ".join(args), r.stderr.strip()))
        return r

    def import_busybox(self, tmp, name="vectora-test:busybox"):
        """A small image from busybox-static (busybox_rootfs)."""
        self.run(["import", busybox_rootfs(tmp), name])
        return name

    def stop(self):
        if not self.proc:
            return
        if self.proc.poll() is None:
            # Bounded: a container whose shim is already gone can keep
            # `docker rm -f` waiting forever (seen once, after 243 shims
            # ended together); dockerd is stopped below either way.
            try:
                ids = self.run(["ps", "-aq"], check=False, timeout=30).stdout.split()
            except subprocess.TimeoutExpired:
                ids = []
            for c in ids:
                try:
                    self.run(["rm", "-f", c], check=False, timeout=20)
                except subprocess.TimeoutExpired:
                    print("# docker rm -f %s did not return in 20 s; stopping dockerd" % c, flush=True)
                    break
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.proc = None
        # Overlay mounts are gone with a clean stop; unmount what is left.
        data = os.path.join(self.dir, "data")
        try:
            with open("/proc/self/mounts") as f:
                mps = [l.split()[1] for l in f if l.split()[1].startswith(self.dir)]
        except OSError:
            mps = []
        for m in sorted(mps, key=len, reverse=True):
            subprocess.run(["umount", "-l", m], capture_output=True)
        shutil.rmtree(data, ignore_errors=True)


def comm(pid):
    try:
        with open("/proc/%d/comm" % pid) as f:
            return f.read().strip()
    except OSError:
        return None


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class SshServer:
    """sshd -D on 127.0.0.1:PORT. .user logs in with .identity (readable by
    client_owner), .known_hosts holds the host key. setenv: SetEnv for the
    sessions (e.g. {"VECTORA_BWRAP": "none"} to act as a host without
    bubblewrap)."""

    def __init__(self, tmp, name="sshd", client_owner=None, setenv=None, timeout=15):
        self.dir = os.path.join(tmp, name)
        os.makedirs(self.dir)
        os.chmod(self.dir, 0o755)
        sshd = _which("sshd")
        keygen = _which("ssh-keygen")
        if not sshd or not keygen or not _which("ssh"):
            raise Unavailable("sshd/ssh not installed (scripts/install-deps installs openssh-server and openssh-client)")
        if os.geteuid() == 0:
            try:
                pw = pwd.getpwnam(SSH_TEST_USER)
            except KeyError:
                raise Unavailable("the sshd test user %r does not exist (scripts/install-deps creates it)" % SSH_TEST_USER)
            os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # sshd's privilege separation directory
        else:
            pw = pwd.getpwuid(os.geteuid())
            # An unprivileged sshd can only log its own user in, and sshd
            # refuses an account without a usable shell (nobody's nologin).
            if os.path.basename(pw.pw_shell or "") in ("nologin", "false", "") or not os.path.isdir(pw.pw_dir):
                raise Unavailable("an unprivileged sshd logs in only its own user, and %s has no login shell or home "
                                  "(%s, %s): run the suite as root or as a user with a shell" %
                                  (pw.pw_name, pw.pw_shell, pw.pw_dir))
        self.user, self.uid, self.gid = pw.pw_name, pw.pw_uid, pw.pw_gid
        self.port = _free_port()
        hostkey = os.path.join(self.dir, "host_ed25519")
        self.identity = os.path.join(self.dir, "id_ed25519")
        for k in (hostkey, self.identity):
            subprocess.run([keygen, "-q", "-t", "ed25519", "-N", "", "-C", "vectora-test", "-f", k], check=True)
        auth = os.path.join(self.dir, "authorized_keys")
        shutil.copy(self.identity + ".pub", auth)
        os.chmod(auth, 0o644)
        if client_owner is not None:
            os.chown(self.identity, client_owner[0], client_owner[1])
        os.chmod(self.identity, 0o600)
        with open(hostkey + ".pub") as f:
            kt, kb = f.read().split()[:2]
        self.known_hosts = os.path.join(self.dir, "known_hosts")
        with open(self.known_hosts, "w") as f:
            f.write("[127.0.0.1]:%d %s %s\n" % (self.port, kt, kb))
        os.chmod(self.known_hosts, 0o644)
        conf = os.path.join(self.dir, "sshd_config")
        lines = ["Port %d" % self.port, "ListenAddress 127.0.0.1", "HostKey " + hostkey,
                 "PidFile " + os.path.join(self.dir, "sshd.pid"), "AuthorizedKeysFile " + auth,
                 "PasswordAuthentication no", "KbdInteractiveAuthentication no", "UsePAM no", "StrictModes no",
                 "PermitRootLogin no", "AllowUsers " + self.user, "X11Forwarding no", "AllowTcpForwarding no",
                 "PrintMotd no", "LogLevel ERROR", "MaxStartups 100", "MaxSessions 100"]
        if setenv:
            lines.append("SetEnv " + " ".join("%s=%s" % kv for kv in setenv.items()))
        with open(conf, "w") as f:
            f.write("\n".join(lines) + "\n")
        self.log = os.path.join(self.dir, "sshd.log")
        with open(self.log, "w") as lf:
            self.proc = subprocess.Popen([sshd, "-D", "-e", "-f", conf], stdin=subprocess.DEVNULL, stdout=lf,
                                         stderr=lf, start_new_session=True)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise Unavailable("sshd exited at start: " + _tail(self.log))
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.5).close()
                return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise Unavailable("sshd did not listen within %d s: %s" % (timeout, _tail(self.log)))

    def toml(self, remote_root=None, worker_path=None):
        s = ('[sandbox.ssh]\nhost = "127.0.0.1"\nuser = "%s"\nport = %d\nidentity_file = "%s"\nknown_hosts = "%s"\n'
             % (self.user, self.port, self.identity, self.known_hosts))
        if remote_root:
            s += 'remote_root = "%s"\n' % remote_root
        if worker_path:
            s += 'worker_path = "%s"\n' % worker_path
        return s

    def sessions(self):
        """pids of everything below the listener: the per-connection sshd
        processes and what runs in the sessions."""
        kids = {}
        for p in os.listdir("/proc"):
            if not p.isdigit():
                continue
            try:
                with open("/proc/%s/stat" % p) as f:
                    st = f.read()
            except OSError:
                continue
            kids.setdefault(int(st[st.rindex(")") + 2:].split()[1]), []).append(int(p))
        out, todo = [], [self.proc.pid]
        while todo:
            for k in kids.get(todo.pop(), []):
                out.append(k)
                todo.append(k)
        return out

    def stop(self):
        if self.proc and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except OSError:
                pass
            for pid in self.sessions():
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


class Podman:
    """Rootless (or rootful) podman with a storage of its own under TMP:
    --root, --runroot and --tmpdir there, so the user's own podman state is
    never touched. .toml() is the [sandbox.podman] table naming it."""

    def __init__(self, tmp):
        self.podman = _which("podman")
        if not self.podman:
            raise Unavailable("podman not installed (scripts/install-deps installs podman and uidmap)")
        self.dir = os.path.join(tmp, "podman")
        self.root = os.path.join(self.dir, "root")
        self.runroot = os.path.join(self.dir, "run")
        os.makedirs(os.path.join(self.runroot, "tmp"), exist_ok=True)
        # Its own HOME and XDG_RUNTIME_DIR too: podman makes ~/.config/cni
        # and $XDG_RUNTIME_DIR/{containers,libpod,runc} whatever --root says.
        self.env = dict(os.environ, HOME=os.path.join(self.dir, "home"), XDG_RUNTIME_DIR=os.path.join(self.dir, "xdg"))
        for d in (self.env["HOME"], self.env["XDG_RUNTIME_DIR"]):
            os.makedirs(d, mode=0o700, exist_ok=True)
        self.image = None

    def run(self, args, check=True, **kw):
        r = subprocess.run([self.podman, "--root", self.root, "--runroot", self.runroot,
                            "--tmpdir", os.path.join(self.runroot, "tmp")] + args,
                           capture_output=True, text=True, env=self.env, **kw)
        if check and r.returncode != 0:
            raise RuntimeError("podman %s: %s" % (" ".join(args), r.stderr.strip()))
        return r

    def import_busybox(self, tmp, name="localhost/vectora-test:busybox"):
        self.run(["import", busybox_rootfs(tmp), name])
        # One container first: what the backend needs of the host (subuids,
        # newuidmap, a runtime that may set rlimits) shows here, as a skip
        # with podman's own words, rather than as every attempt failing.
        opts = ["--userns=keep-id"] if os.geteuid() != 0 else []
        r = self.run(["run", "--rm", "--pull", "never", "--network", "none"] + opts + [name, "/bin/true"],
                     check=False, timeout=120)
        if r.returncode != 0:
            raise Unavailable("podman cannot run a container here: " + r.stderr.strip()[-600:])
        self.image = name
        return name

    def toml(self):
        return '[sandbox.podman]\nimage = "%s"\nroot = "%s"\nrunroot = "%s"\n' % (self.image, self.root, self.runroot)

    def stop(self):
        # Rootless podman keeps its user namespace alive in a pause process
        # of this storage's own (its pid in the tmpdir): ended last.
        try:
            with open(os.path.join(self.runroot, "tmp", "pause.pid")) as f:
                pause = int(f.read().strip())
        except (OSError, ValueError):
            pause = None
        try:
            ids = self.run(["ps", "-aq"], check=False, timeout=30).stdout.split()
            for c in ids:
                self.run(["rm", "-f", c], check=False, timeout=30)
            # Storage made in a user namespace holds files of subordinate
            # ids, which only a process in that namespace may remove.
            if os.geteuid() != 0:
                self.run(["unshare", "rm", "-rf", self.root, self.runroot], check=False, timeout=120)
        except subprocess.TimeoutExpired:
            pass
        if pause:
            try:
                os.kill(pause, signal.SIGKILL)
            except OSError:
                pass
        shutil.rmtree(self.dir, ignore_errors=True)
