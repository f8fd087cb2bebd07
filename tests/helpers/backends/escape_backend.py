# SPDX-License-Identifier: MIT
"""The escape suite's backend switch: VECTORA_ESCAPE_BACKEND=docker|ssh|podman
runs tests/escape/test_escape.py unchanged against a private dockerd, a
loopback sshd or podman with a storage of its own (servers.py), with the
workspaces' vectora.toml naming that backend. "local" (the default) changes
nothing."""

import atexit
import os
import shutil
import tempfile

import servers


class Backend:
    def __init__(self, name):
        self.name = name or "local"
        self.server = None
        self.tmp = None
        self.extra = ""

    def start(self):
        """None when ready, else why the suite cannot run on this backend."""
        if self.name == "local":
            return None
        self.tmp = tempfile.mkdtemp(prefix="vectora-escape-%s-" % self.name)
        # Stopped even when the suite dies half way.
        atexit.register(self.stop)
        os.chmod(self.tmp, 0o755)
        try:
            if self.name == "docker":
                self.server = servers.DockerEngine(self.tmp)
                image = self.server.import_busybox(self.tmp)
                self.extra = '[sandbox.docker]\nimage = "%s"\nhost = "%s"\n' % (image, self.server.host)
            elif self.name == "ssh":
                # The key is root's and world-readable (ssh accepts a key
                # another user owns), so any identity of the suite may use it.
                owner = (0, 0) if os.geteuid() == 0 else (os.geteuid(), os.getegid())
                self.server = servers.SshServer(self.tmp, client_owner=owner)
                os.chmod(self.server.identity, 0o644)
                wbin = os.path.join(self.tmp, "wbin")
                os.makedirs(wbin)
                os.chown(wbin, self.server.uid, self.server.gid)
                self.extra = self.server.toml(worker_path=os.path.join(wbin, "vectora-worker"))
            elif self.name == "podman":
                self.server = servers.Podman(self.tmp)
                self.server.import_busybox(self.tmp)
                self.extra = self.server.toml()
            else:
                return "unknown VECTORA_ESCAPE_BACKEND %r" % self.name
        except (servers.Unavailable, RuntimeError) as e:
            return "%s backend unavailable: %s" % (self.name, e)
        return None

    def jail_ids(self, uid, gid):
        """The uid the jail runs as: on ssh the remote login user (the suite
        plants the secrets as the jail's own uid, so only the sandbox stands
        in the way)."""
        if self.name == "ssh" and self.server and os.geteuid() == 0:
            return self.server.uid, self.server.gid
        return uid, gid

    def toml(self):
        return self.extra

    def identity_not_applicable(self, ident_uid):
        if self.name == "docker" and ident_uid != 0:
            return ("the docker client needs the engine's socket, which the test engine gives to root only; "
                    "the jail's own uid is covered by the root run (the container runs as uid 65534)")
        return None

    # Attempts whose premise is the local backend's mechanism, not a
    # property the other backend lacks; each says why.
    NOT_APPLICABLE = {
        "docker": {
            "not host root: jail uid is not 0": "no user namespace in a container: --user runs it as the unprivileged "
                                                "host uid directly (the uid tests above check it is not 0)",
            "control: network = true reaches the host listener": "the test engine runs with --bridge none: a "
                                                                 "container has no network to reach the host with",
            "control: network = true reaches the host's own address": "the test engine runs with --bridge none: a "
                                                                      "container has no network to reach the host with",
            "no_gpu = true: no GPU nodes, no /sys": "docker always mounts a read-only sysfs; GPU device nodes are only "
                                                    "added with no_gpu = false (unit-tested)",
            "degraded: no libseccomp: runs, warns, Seccomp: 0": "the engine's own seccomp profile stays under the "
                                                               "worker's; the degradation itself is reported as on local",
            "degraded: no Landlock: runs, warns": "its control writes in /dev, which the engine mounts root-owned",
            "the workspace mount is nosuid,nodev inside": "docker's --mount has no nosuid/nodev option for binds; "
                                                          "inside, no-new-privileges makes a setuid file inert, and "
                                                          "the seccomp filter keeps one from being made (the "
                                                          "privileged-file attempts run on docker too)",
        },
        "podman": {
            "no_gpu = true: no GPU nodes, no /sys": "podman always mounts a read-only sysfs, as docker does; GPU "
                                                    "device nodes are only added with no_gpu = false (unit-tested)",
            "degraded: no libseccomp: runs, warns, Seccomp: 0": "the engine's own seccomp profile stays under the "
                                                               "worker's; the degradation itself is reported as on local",
            "degraded: no Landlock: runs, warns": "its control writes in /dev, which the engine mounts root-owned",
            "the workspace mount is nosuid,nodev inside": "docker's --mount syntax, which the podman backend renders, "
                                                          "has no nosuid/nodev for binds; inside, no-new-privileges "
                                                          "makes a setuid file inert, the rootless user namespace maps "
                                                          "no host root to gain, and the seccomp filter keeps a setuid "
                                                          "file from being made (the privileged-file attempts run)",
        },
        "ssh": {
            "control: through the proxy": "the ssh backend refuses a network allowlist until its relay exists",
            "allowlist:": "the ssh backend refuses a network allowlist until its relay exists (test-backends "
                          "checks the refusal)",
            "degraded: no Landlock: runs, warns": "its control needs a /dev the jail's uid can write once Landlock is "
                                                  "off; under the remote's bwrap (run by the ssh login user) /dev "
                                                  "stays unwritable, which is stricter; the warning half is checked",
        },
    }

    def not_applicable(self, name):
        for k, why in self.NOT_APPLICABLE.get(self.name, {}).items():
            if k in name:
                return why
        return None

    def stop(self):
        if self.server:
            self.server.stop()
            self.server = None
        if self.tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None
