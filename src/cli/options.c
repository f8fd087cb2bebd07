/* SPDX-License-Identifier: MIT */
/* vectora-sandbox's options (one table, parsed the same way for every
 * verb, anywhere on the line), the daemon's socket and the workspace they
 * name. */
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "cli.h"
#include "fd-util.h"
#include "path-util.h"
#include "paths.h"

const CliOptSpec cli_options[_OPT_MAX] = {
        [OPT_WORKSPACE] = { "workspace", 'w', "DIR", "the workspace directory (default: the current directory)" },
        [OPT_JSON] = { "json", 0, NULL, "print the result as one JSON object on stdout, failures included" },
        [OPT_SOCKET] = { "socket", 0, "PATH",
                         "the daemon's socket (default: $VECTORA_SANDBOX_SOCKET, else the daemon's default socket when a daemon listens there)" },
        [OPT_NO_DAEMON] = { "no-daemon", 0, NULL, "run in-process even when a daemon listens at the default socket" },
        [OPT_HELP] = { "help", 'h', NULL, "show this help" },
        [OPT_AUDIT_LOG] = { "audit-log", 0, "FILE",
                            "append a JSON line per call served without a daemon to FILE (a daemon keeps its own)" },
        [OPT_REQUIRE_SANDBOX] = { "require-sandbox", 0, NULL,
                                  "refuse (exit 125) if the workspace would run unsandboxed; also VECTORA_REQUIRE_SANDBOX=1" },
        [OPT_TIMEOUT] = { "timeout", 0, "S", "seconds before the command's whole process group is killed (1..604800)" },
        [OPT_ENV] = { "env", 'e', "K=V", "add a variable to the command's environment (repeatable)" },
        [OPT_CWD] = { "cwd", 0, "DIR", "run in DIR, relative to the workspace or absolute" },
        [OPT_NO_STDIN] = { "no-stdin", 0, NULL,
                           "do not pass stdin to the command (it gets /dev/null; the default when stdin is a terminal)" },
        [OPT_OFFSET] = { "offset", 0, "N", "start at byte N" },
        [OPT_LIMIT] = { "limit", 0, "N", "print at most N bytes (default: the whole file)" },
        [OPT_MAX_OUTPUT] = { "max-output", 0, "N",
                             "keep at most N bytes of each output stream, head and tail (capped by [sandbox.limits] max_output)" },
        [OPT_START_LINE] = { "start-line", 0, "N", "start at line N (the first is 1) instead of a byte offset" },
        [OPT_MAX_LINES] = { "max-lines", 0, "N", "print at most N lines (from --start-line, default 1)" },
        [OPT_NO_PARENTS] = { "no-parents", 0, NULL, "refuse (not_found) instead of creating missing parent directories" },
        [OPT_OLD] = { "old", 0, "TEXT", "the exact text to replace (must occur once, unless --all)" },
        [OPT_NEW] = { "new", 0, "TEXT", "the replacement text" },
        [OPT_ALL] = { "all", 0, NULL, "replace every occurrence of --old" },
        [OPT_FORCE] = { "force", 0, NULL, "replace an existing vectora.toml" },
        [OPT_MAX_ENTRIES] = { "max-entries", 0, "N", "list at most N entries, the first by name (1..2000, default 500)" },
        [OPT_MAX_RESULTS] = { "max-results", 0, "N", "list at most N paths (1..5000, default 500)" },
        [OPT_MAX_MATCHES] = { "max-matches", 0, "N", "show at most N matching lines (1..5000, default 200)" },
        [OPT_GLOB] = { "glob", 'g', "GLOB", "search only files whose path below PATH matches GLOB" },
        [OPT_IGNORE_CASE] = { "ignore-case", 'i', NULL, "match regardless of case" },
        [OPT_FIXED] = { "fixed-strings", 'F', NULL, "PATTERN is plain text, not a regex" },
        [OPT_CONTEXT] = { "context", 'C', "N", "show N lines before and after each match (0..10)" },
        [OPT_HOST] = { "host", 0, "H", "a host the secret may be sent to, as a network entry (repeatable)" },
        [OPT_HEADER] = { "header", 0, "NAME",
                         "a request header besides Authorization the secret may go in, e.g. X-Api-Key (repeatable)" },
        [OPT_FROM_ENV] = { "from-env", 0, "VAR", "take the secret's value from environment variable VAR, not stdin" },
        [OPT_FROM_FILE] = { "from-file", 0, "PATH", "take the secret's value from file PATH, not stdin" },
        [OPT_FOLLOW] = { "follow", 'f', NULL, "keep printing new output until the process ends; exit with its status" },
};

static char *default_socket;

const char *cli_default_socket(void) {
        if (!default_socket && vs_default_socket(&default_socket) < 0)
                return "(out of memory)";
        return default_socket;
}

/* Only a socket that the caller or root made, in a directory no one else
 * may write to: in a shared /tmp another user could have planted
 * /tmp/vectora-sandbox-UID first, and a CLI that talked to their socket
 * would hand them its commands and file contents. */
static bool trusted_socket(const char *path) {
        struct stat st;
        if (lstat(path, &st) < 0 || !S_ISSOCK(st.st_mode) || (st.st_uid != geteuid() && st.st_uid != 0))
                return false;
        _cleanup_free_ char *dir = strdup(path);
        char *slash = dir ? strrchr(dir, '/') : NULL;
        if (!slash)
                return false;
        *(slash == dir ? slash + 1 : slash) = 0;
        return lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_uid == geteuid() || st.st_uid == 0) &&
               !(st.st_mode & 022);
}

static bool daemon_listens(const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        if (strlen(path) >= sizeof sa.sun_path || !trusted_socket(path))
                return false;
        snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        return fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
}

const char *cli_socket(const CliArgs *a) {
        static int probed = -1;
        if (a->val[OPT_NO_DAEMON])
                return NULL;
        if (a->val[OPT_SOCKET])
                return a->val[OPT_SOCKET];
        const char *e = getenv("VECTORA_SANDBOX_SOCKET");
        if (e && *e)
                return e;
        /* Nothing named: the daemon's default socket, if a daemon is there. */
        if (probed < 0)
                probed = daemon_listens(cli_default_socket());
        return probed ? cli_default_socket() : NULL;
}

char *cli_workspace_abs(const CliArgs *a) {
        /* As written: config_locate() checks a path through a symlink against
         * the workspace it lies in as spelled. */
        return path_absolute_os(a->val[OPT_WORKSPACE] ? a->val[OPT_WORKSPACE] : ".");
}


void cli_options_done(void) {
        free(default_socket);
        default_socket = NULL;
}
