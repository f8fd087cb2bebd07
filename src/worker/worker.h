/* SPDX-License-Identifier: MIT */
#pragma once

/* Internal interfaces of vectora-worker (one file per concern):
 *   main.c     handshake, poll loop, request dispatch through the allowlist
 *   enforce.c  the ordered hardening step
 *   resolve.c  path policy: confined resolution, masks, protected paths
 *   fileops.c  read_file, write_file, stat, list_dir
 *   sweep.c    temp files of killed writes
 *   exec.c     commands: output capture, timeouts, cancel; what a command and a session share
 *   child.c    one child process, spawn to reap (child.h), for exec.c and session.c
 *   session.c  sessions: terminals and background processes that outlive their request */

#include <poll.h>
#include <stdbool.h>
#include <time.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "glob.h"
#include "jsonl.h"
#include "protocol.h"
#include "time-util.h"
#include "strbuf.h"

/* ---- enforce.c ---- */

/* Applies the init policy to the calling process, in order: no_new_privs,
 * Landlock, seccomp, then a self-check. On success *ret says what is
 * enforced (degraded: malloc'd strv). A failed layer named in
 * init->require returns -EPERM with *err; nothing is rolled back (the caller
 * exits 125). */
int enforce_policy(const ProtocolInit *init, ProtocolReady *ret, VsError **err);

/* proxy-relay.c: listens on 127.0.0.1:port in the jail and relays each
 * connection to the daemon's proxy at socket_path, in a child process
 * (*ret_pid) that dies with the worker. Call after enforce_policy(). */
int proxy_relay_start(const char *socket_path, uint16_t port, pid_t *ret_pid, VsError **err);
/* verify.c: init's verify_empty paths are empty read-only files/dirs and
 * its verify_readonly paths on read-only mounts, none reached through a
 * symlink; fails (kind "init_failed") otherwise. */
int verify_mounts(const ProtocolInit *init, VsError **err);
/* Layers this process could enforce (for hello): strv. */
char **enforce_capabilities(int *ret_landlock_abi);

/* ---- resolve.c ---- */

typedef struct Policy {
        ProtocolMode mode;
        char *workspace;     /* normalized */
        char **rw;           /* normalized; direct mode: "/" */
        char **ro;
        char **protected_paths;
        VsGlobSet *masks;    /* NULL: none */
        VsGlobSet *protect;  /* protect = [...] globs; NULL: none */
} Policy;

int policy_init(Policy *p, const ProtocolInit *init, VsError **err);
void policy_done(Policy *p);

typedef enum PathFlags {
        PATH_WRITE = 1u << 0,          /* the target must be writable: rw root, not protected */
        PATH_FOLLOW_FINAL = 1u << 1,   /* follow a symlink in the last component */
        PATH_CREATE_PARENTS = 1u << 2, /* mkdir missing parents (with PATH_WRITE) */
} PathFlags;

typedef struct Resolved {
        int dir_fd;  /* the parent directory (O_PATH; O_RDONLY|O_DIRECTORY with PATH_WRITE) */
        char *name;  /* the last component, "." for a root itself */
        char *path;  /* the resolved absolute path */
        bool exists; /* the last component exists (lstat) */
} Resolved;

#define RESOLVED_INIT { -EBADF, NULL, NULL, false }

/* Resolves path (absolute, or relative to the workspace) under the policy.
 * Denials return -EACCES with *err kind "denied". The target's existence is
 * not required. */
int resolve_path(const Policy *p, const char *path, unsigned flags, Resolved *ret, VsError **err);
void resolved_done(Resolved *r);
/* Is this resolved absolute path masked (relative to the workspace)? */
bool policy_is_masked(const Policy *p, const char *abs, bool is_dir);
/* Opens a directory for exec's cwd (O_PATH), absolute or workspace-relative. */
int resolve_cwd(const Policy *p, const char *cwd, int *ret_fd, VsError **err);

/* ---- sweep.c ---- */
/* ".vectora-tmp-" and six letters or digits: write_file's temp names. */
bool sweep_is_temp_name(const char *name);
/* Removes the temp files of killed writes under the writable roots (the
 * workspace in direct mode); returns how many. *young (may be NULL): how
 * many were left for being too new to tell from a write just begun. */
size_t sweep_temp_files(const Policy *p, size_t *young, time_t *newest_young);
/* How old a temp file must be before a sweep takes it (seconds). */
#define SWEEP_MIN_AGE_S 2
/* How long after ready the start-up sweep waits (ms), so the first call,
 * sent as ready arrives, is served first. */
#define SWEEP_START_DELAY_MS 300

/* ---- fileops.c (synchronous; each appends a reply to out) ---- */

int fileops_read_file(const Policy *p, json_t *obj, StrBuf *out, VsError **err);
int fileops_write_file(const Policy *p, json_t *obj, const char *data, size_t len, StrBuf *out,
                       VsError **err);
int fileops_stat(const Policy *p, json_t *obj, StrBuf *out, VsError **err);
int fileops_list_dir(const Policy *p, json_t *obj, StrBuf *out, VsError **err);
/* glob and grep (find.c): the walk, its reply appended to out. */
int find_run(const Policy *p, json_t *obj, StrBuf *out, VsError **err);
/* grep's pattern with \d and \D outside brackets as [0-9] and [^0-9];
 * NULL on OOM. */
char *find_regex_translate(const char *pattern);

/* ---- exec.c ---- */

typedef struct Exec Exec;

typedef struct ExecDefaults {
        char **env;          /* init env, "K=V" */
        uint64_t timeout_ms;
        uint64_t max_output;
        uint64_t memory;     /* RLIMIT_DATA of each command, 0 = none */
} ExecDefaults;

/* What a command and a session share before they start: the cwd (opened
 * against the policy), init's environment overridden and extended by the
 * request's (a vector of borrowed strings), the program found on that
 * environment's PATH. */
typedef struct ExecPrep {
        int cwd_fd;
        char **envp;
        char *path;
} ExecPrep;
#define EXEC_PREP_INIT { .cwd_fd = -EBADF }
/* 0 and *ret (release with exec_prep_done), 126/127 when argv0 is not
 * executable/not found (nothing to release), or a negative errno with *err. */
int exec_prepare(const Policy *p, const ExecDefaults *d, const char *cwd, char *const *env, const char *argv0,
                 ExecPrep *ret, VsError **err);
void exec_prep_done(ExecPrep *x);

/* Starts the command of an exec request. stdin_data (owned, free()) may be
 * NULL. On success the Exec is linked into *list. A command that cannot
 * start still "succeeds": its reply (126/127) is appended to out. */
int exec_start(Exec **list, const Policy *p, const ExecDefaults *d, json_t *obj, char *stdin_data,
               size_t stdin_len, StrBuf *out, VsError **err);
/* Number of pollfds exec_fill_poll() may use. */
size_t exec_count_fds(Exec *list);
/* Adds the pollfds of running commands; returns how many. */
size_t exec_fill_poll(Exec *list, struct pollfd *fds);
/* Services ready fds (the same array), timeouts and finished commands,
 * appending replies to out. */
void exec_process(Exec **list, struct pollfd *fds, size_t n, StrBuf *out);
/* Milliseconds until the nearest deadline, -1 when none. */
int exec_next_timeout_ms(Exec *list);
/* A child was reaped: true when it was a command's. */
bool exec_reaped(Exec *list, pid_t pid, int status);
/* Kills the command with this request id. */
bool exec_cancel(Exec *list, uint64_t id);
bool exec_id_in_use(Exec *list, uint64_t id);
/* SIGKILLs every command group, reaps, frees; no replies. */
void exec_kill_all(Exec **list);

/* ---- session.c ---- */

typedef struct Session Session;

/* session_open: starts the process and appends its reply (or returns a
 * failure with *err: nothing started). Linked into *list. */
int session_open(Session **list, const Policy *p, const ExecDefaults *d, json_t *obj, StrBuf *out, VsError **err);
/* session_input/resize/signal/pause (data: input's raw payload, borrowed). */
int session_request(Session *list, json_t *obj, const char *data, size_t len, StrBuf *out, VsError **err);
bool session_id_in_use(Session *list, uint64_t id);
size_t session_count_fds(Session *list);
/* out_full: the queue to the peer is long; read no output meanwhile. */
size_t session_fill_poll(Session *list, struct pollfd *fds, bool out_full);
/* Services ready fds, timeouts and ended sessions, appending events to out. */
void session_process(Session **list, struct pollfd *fds, size_t n, StrBuf *out);
int session_next_timeout_ms(Session *list);
bool session_reaped(Session *list, pid_t pid, int status);
/* SIGKILLs every session's group, reaps, frees; no events. */
void session_kill_all(Session **list);
