/* SPDX-License-Identifier: MIT */
#pragma once

/* The worker protocol (docs/protocol.md): message types, the per-state
 * allowlist of operations, typed structs, decoders (through json-util.h
 * dispatch tables that reject unknown fields) and encoders. Used by the
 * worker, the daemon and the CLI's embedded mode alike. Pure: no OS calls.
 *
 * Encoders append one complete framed message (header line and, where the
 * message has one, its raw payload) to a StrBuf; they return 0, -ENOMEM,
 * -ENOBUFS or -EMSGSIZE and leave out unchanged on failure. Inputs are
 * borrowed.
 *
 * Decoders take the header object of a JsonlMsg (jsonl.h; "raw" already
 * stripped, its length passed separately where it matters) and fill a struct
 * whose strings are BORROWED from that object: keep the json_t alive while
 * the struct is used. What a decoder allocates (vectors, the decoded seccomp
 * program, env) is freed by the matching protocol_*_done(); call it only on
 * structs a decoder filled. On failure they return -EINVAL (or -ENOMEM) with
 * *err set (kind "bad_request"), and *ret untouched. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "error.h"
#include "strbuf.h"

#define PROTOCOL_VERSION 1

/* Operations a peer may send to the worker. */
typedef enum ProtocolOp {
        PROTOCOL_OP_INIT,       /* {"type":"init",...}: the only message without id/op */
        PROTOCOL_OP_EXEC,
        PROTOCOL_OP_READ_FILE,
        PROTOCOL_OP_WRITE_FILE,
        PROTOCOL_OP_STAT,
        PROTOCOL_OP_LIST_DIR,
        PROTOCOL_OP_CANCEL,
        PROTOCOL_OP_SHUTDOWN,
        PROTOCOL_OP_SESSION_OPEN,   /* a long-lived process: terminal_open (PTY), process_start (pipes) */
        PROTOCOL_OP_SESSION_INPUT,
        PROTOCOL_OP_SESSION_RESIZE,
        PROTOCOL_OP_SESSION_SIGNAL,
        PROTOCOL_OP_SESSION_PAUSE,
        PROTOCOL_OP_GLOB,           /* paths below a directory matching a pattern (find.c) */
        PROTOCOL_OP_GREP,           /* lines of files below a directory matching a regex */
        _PROTOCOL_OP_MAX,
        _PROTOCOL_OP_INVALID = -1,
} ProtocolOp;

const char *protocol_op_to_string(ProtocolOp op);
/* _PROTOCOL_OP_INVALID for an unknown name (also for "init": init is a type). */
ProtocolOp protocol_op_from_string(const char *s);

/* The worker's states (OpenSSH monitor style allowlist). */
typedef enum ProtocolState {
        PROTOCOL_STATE_HELLO_SENT, /* accepts: init */
        PROTOCOL_STATE_READY,      /* accepts: exec read_file write_file stat list_dir glob grep cancel shutdown session_* */
        _PROTOCOL_STATE_MAX,
} ProtocolState;

const char *protocol_state_to_string(ProtocolState s);
bool protocol_op_allowed(ProtocolState s, ProtocolOp op);

/* Error codes of {"ok":false,"error":{"code":...,"message":...}}. */
typedef enum ProtocolErrorCode {
        PROTOCOL_ERROR_BAD_REQUEST,
        PROTOCOL_ERROR_UNKNOWN_OP,
        PROTOCOL_ERROR_NOT_READY,
        PROTOCOL_ERROR_DENIED,
        PROTOCOL_ERROR_NOT_FOUND,
        PROTOCOL_ERROR_EXISTS,
        PROTOCOL_ERROR_PRECONDITION_FAILED,
        PROTOCOL_ERROR_TOO_LARGE,
        PROTOCOL_ERROR_IO,
        PROTOCOL_ERROR_CANCELLED,
        PROTOCOL_ERROR_PROCESS_LIMIT, /* a command could not start: the jail is at its process limit */
        _PROTOCOL_ERROR_MAX,
        _PROTOCOL_ERROR_INVALID = -1,
} ProtocolErrorCode;

const char *protocol_error_code_to_string(ProtocolErrorCode c);
ProtocolErrorCode protocol_error_code_from_string(const char *s);
/* The code for a failure: err's kind when it names a code, else from the
 * errno (ENOENT not_found, EEXIST exists, EFBIG/EMSGSIZE too_large,
 * ECANCELED cancelled, EINVAL bad_request, others io). */
ProtocolErrorCode protocol_error_code_from_error(int code, const VsError *err);

typedef enum ProtocolFileType {
        PROTOCOL_FILE_FILE,
        PROTOCOL_FILE_DIR,
        PROTOCOL_FILE_SYMLINK,
        PROTOCOL_FILE_OTHER,
        _PROTOCOL_FILE_MAX,
        _PROTOCOL_FILE_INVALID = -1,
} ProtocolFileType;

const char *protocol_file_type_to_string(ProtocolFileType t);
ProtocolFileType protocol_file_type_from_string(const char *s);
/* From st_mode. */
ProtocolFileType protocol_file_type_from_mode(unsigned mode);

/* ---- worker -> daemon: handshake ---- */

typedef struct ProtocolHello {
        uint64_t version;  /* PROTOCOL_VERSION */
        const char *arch;  /* uname machine, e.g. "x86_64" */
        int64_t pid;
        int64_t landlock_abi; /* 0 when absent */
        char **can;        /* layers the worker can enforce: "no_new_privs" "seccomp" "landlock" */
        /* The worker's effective ids, as its user namespace shows them: the
         * ids every process of the jail has, which the seccomp filter lets
         * chown give. -1 (or absent): unknown, every chown is refused.
         * Decoding refuses anything outside -1..0xfffffffe. */
        int64_t uid, gid;
} ProtocolHello;

typedef struct ProtocolReady {
        bool no_new_privs;
        bool seccomp;
        int64_t landlock_abi; /* ABI enforced, 0 = not enforced */
        char **degraded;      /* "layer: reason" for each layer not applied */
} ProtocolReady;

/* The value of a worker message's "type" ("hello", "ready", "init_failed"),
 * or NULL. Borrowed. */
const char *protocol_message_type(json_t *obj);

int protocol_encode_hello(StrBuf *out, const ProtocolHello *h);
int protocol_decode_hello(json_t *obj, ProtocolHello *ret, VsError **err);
void protocol_hello_done(ProtocolHello *h);

int protocol_encode_ready(StrBuf *out, const ProtocolReady *r);
int protocol_decode_ready(json_t *obj, ProtocolReady *ret, VsError **err);
void protocol_ready_done(ProtocolReady *r);

int protocol_encode_init_failed(StrBuf *out, const char *message);
/* *ret_message borrowed. */
int protocol_decode_init_failed(json_t *obj, const char **ret_message, VsError **err);

/* ---- daemon -> worker: init ---- */

typedef enum ProtocolMode {
        PROTOCOL_MODE_JAIL,   /* enforce layers and the path policy */
        PROTOCOL_MODE_DIRECT, /* unsandboxed workspace: no policy at all */
        _PROTOCOL_MODE_MAX,
        _PROTOCOL_MODE_INVALID = -1,
} ProtocolMode;

const char *protocol_mode_to_string(ProtocolMode m);
ProtocolMode protocol_mode_from_string(const char *s);

typedef struct ProtocolLimits {
        uint64_t timeout_ms; /* per exec; 0 = none given (worker default 120000) */
        uint64_t max_output; /* bytes kept per stream; 0 = none given (worker default 1 MiB) */
        uint64_t pids;       /* processes in the jail (RLIMIT_NPROC, counted per user namespace); 0 = none */
        uint64_t memory;     /* bytes of private writable memory per process (RLIMIT_DATA; address space only reserved is not counted); 0 = none */
} ProtocolLimits;

typedef struct ProtocolInit {
        ProtocolMode mode;
        const char *workspace;    /* absolute, normalized */
        char **rw_paths;          /* absolute; NULL = none */
        char **ro_paths;
        char **mask;              /* globs relative to workspace */
        char **protected_paths;   /* "protected": absolute; never written */
        char **protect;           /* globs relative to each listed root; never written */
        char **verify_empty;      /* absolute: must be empty read-only files/dirs before ready */
        char **verify_readonly;   /* absolute: must be on read-only mounts before ready */
        char **env;               /* "K=V" (decode: strings owned by the struct) */
        void *seccomp_bpf;        /* struct sock_filter[]; NULL = null (decode: owned) */
        size_t seccomp_bpf_len;   /* bytes, a multiple of 8 */
        bool landlock;            /* false = "landlock": null */
        char **landlock_rw;       /* landlock.rw */
        char **require;           /* layers that must not degrade */
        ProtocolLimits limits;
        /* Network allowlist: relay 127.0.0.1:proxy_port in the jail to the
         * daemon's proxy at this unix socket path (in the jail). NULL: none. */
        const char *proxy_socket;
        uint16_t proxy_port;
} ProtocolInit;

int protocol_encode_init(StrBuf *out, const ProtocolInit *init);
/* Checks, beyond types: mode known, workspace and rw/ro/protected paths
 * absolute, env keys non-empty without '=', bpf base64 of whole 8-byte
 * instructions, require names known layers. */
int protocol_decode_init(json_t *obj, ProtocolInit *ret, VsError **err);
void protocol_init_done(ProtocolInit *init);

/* ---- daemon -> worker: requests ---- */

typedef struct ProtocolRequestHead {
        uint64_t id;
        ProtocolOp op;
} ProtocolRequestHead;

/* The id of a request, if it has a valid one (for error replies to requests
 * that fail to decode). -EINVAL otherwise. */
int protocol_peek_id(json_t *obj, uint64_t *ret_id);
/* Classifies a message: {"type":"init"} -> PROTOCOL_OP_INIT (id 0);
 * {"id":N,"op":"..."} -> that op. Errors: *err kind "bad_request" (no valid
 * id/op or type) or "unknown_op" (-EOPNOTSUPP). Does not check other
 * fields. */
int protocol_decode_request_head(json_t *obj, ProtocolRequestHead *ret, VsError **err);

typedef struct ProtocolExecRequest {
        ProtocolRequestHead head;
        char **argv;          /* non-empty */
        const char *cwd;      /* NULL = workspace; relative to workspace or absolute */
        char **env;           /* "K=V" added to init's env (decode: owned strings) */
        uint64_t timeout_ms;  /* 0 = init's limit */
        uint64_t max_output;  /* 0 = init's limit */
        /* stdin: the message's raw payload (has_raw), else /dev/null */
} ProtocolExecRequest;

typedef struct ProtocolReadFileRequest {
        ProtocolRequestHead head;
        const char *path;
        uint64_t offset;
        uint64_t limit;       /* 0 = up to JSONL_MAX_RAW */
        uint64_t start_line;  /* > 0: start at this line (1-based) instead of offset */
        uint64_t max_lines;   /* > 0: at most this many lines (and at most limit bytes) */
} ProtocolReadFileRequest;

typedef struct ProtocolWriteFileRequest {
        ProtocolRequestHead head;
        const char *path;
        bool has_mode;
        uint64_t mode;        /* permission bits, <= 07777 */
        bool create_parents;
        const char *if_sha256; /* NULL: no precondition; "": must not exist; else 64 hex */
        /* content: the message's raw payload (none = empty file) */
} ProtocolWriteFileRequest;

typedef struct ProtocolPathRequest { /* stat */
        ProtocolRequestHead head;
        const char *path;
} ProtocolPathRequest;

typedef struct ProtocolListDirRequest {
        ProtocolRequestHead head;
        const char *path;
        uint64_t max_entries; /* entries in the reply, the first by name; 0: all */
} ProtocolListDirRequest;

typedef struct ProtocolCancelRequest {
        ProtocolRequestHead head;
        uint64_t target;
} ProtocolCancelRequest;

/* Request decoders check that the object's op is theirs. */
int protocol_decode_exec_request(json_t *obj, ProtocolExecRequest *ret, VsError **err);
void protocol_exec_request_done(ProtocolExecRequest *r);
int protocol_decode_read_file_request(json_t *obj, ProtocolReadFileRequest *ret, VsError **err);
int protocol_decode_write_file_request(json_t *obj, ProtocolWriteFileRequest *ret, VsError **err);
int protocol_decode_stat_request(json_t *obj, ProtocolPathRequest *ret, VsError **err);
int protocol_decode_list_dir_request(json_t *obj, ProtocolListDirRequest *ret, VsError **err);
int protocol_decode_cancel_request(json_t *obj, ProtocolCancelRequest *ret, VsError **err);
int protocol_decode_shutdown_request(json_t *obj, ProtocolRequestHead *ret, VsError **err);

/* stdin_data != NULL or stdin_len > 0: sent as raw (stdin); else /dev/null.
 * The head's op is ignored (each encoder writes its own). */
int protocol_encode_exec_request(StrBuf *out, uint64_t id, const ProtocolExecRequest *r,
                                 const void *stdin_data, size_t stdin_len);
int protocol_encode_read_file_request(StrBuf *out, uint64_t id, const ProtocolReadFileRequest *r);
int protocol_encode_write_file_request(StrBuf *out, uint64_t id, const ProtocolWriteFileRequest *r,
                                       const void *data, size_t len);
int protocol_encode_stat_request(StrBuf *out, uint64_t id, const char *path);
int protocol_encode_list_dir_request(StrBuf *out, uint64_t id, const ProtocolListDirRequest *r);
int protocol_encode_cancel_request(StrBuf *out, uint64_t id, uint64_t target);
int protocol_encode_shutdown_request(StrBuf *out, uint64_t id);

/* ---- worker -> daemon: replies ---- */

typedef struct ProtocolReplyHead {
        bool has_id;                 /* false: reply to a line without a valid id ("id":null) */
        uint64_t id;
        bool ok;
        ProtocolErrorCode error_code;/* !ok; _PROTOCOL_ERROR_INVALID for a code this side does not know */
        const char *error_code_name; /* !ok */
        const char *error_message;   /* !ok */
} ProtocolReplyHead;

/* Any reply: id, ok and, when !ok, the error. Other fields are left to the
 * per-op decoders below. */
int protocol_decode_reply_head(json_t *obj, ProtocolReplyHead *ret, VsError **err);

/* has_id false: "id": null. message may be NULL. */
int protocol_encode_error(StrBuf *out, bool has_id, uint64_t id, ProtocolErrorCode code,
                          const char *message);

typedef struct ProtocolExecReply {
        int64_t exit_code;     /* 0..255; 126/127 when it could not start; 128+N when killed by signal N */
        int64_t signal;        /* N when killed by signal N, else 0 */
        bool timed_out;
        bool cancelled;
        uint64_t stdout_len;   /* bytes of stdout in raw, first */
        uint64_t stderr_len;   /* then stderr */
        uint64_t stdout_total; /* what the command wrote */
        uint64_t stderr_total;
        uint64_t duration_us;
} ProtocolExecReply;

typedef struct ProtocolReadFileReply {
        uint64_t size;          /* whole file */
        const char *sha256;     /* whole file, 64 hex */
        uint64_t offset;
        bool eof;               /* the data reaches the end of the file */
        uint64_t start_line;    /* the line (1-based) the data starts in; 0 from an older worker */
        /* data: raw */
} ProtocolReadFileReply;

typedef struct ProtocolWriteFileReply {
        uint64_t size;
        const char *sha256;
        bool created;
} ProtocolWriteFileReply;

typedef struct ProtocolStatReply {
        ProtocolFileType type;  /* of the path itself (a final symlink is not followed) */
        uint64_t size;
        uint64_t mode;          /* permission bits */
        int64_t mtime_ns;
} ProtocolStatReply;

typedef struct ProtocolDirEntry {
        const char *name;
        ProtocolFileType type;
        uint64_t size;             /* st_size (of a symlink itself) */
} ProtocolDirEntry;

typedef struct ProtocolListDirReply {
        ProtocolDirEntry *entries; /* decode: array owned, names borrowed */
        size_t n_entries;
        uint64_t total;            /* entries the directory shows (masked ones are not counted) */
        bool truncated;            /* max_entries left some out */
} ProtocolListDirReply;

/* stdout_data/stderr_data hold r->stdout_len / r->stderr_len bytes. */
int protocol_encode_exec_reply(StrBuf *out, uint64_t id, const ProtocolExecReply *r,
                               const void *stdout_data, const void *stderr_data);
/* raw_len: the message's raw length; must equal stdout_len + stderr_len. */
int protocol_decode_exec_reply(json_t *obj, size_t raw_len, ProtocolExecReply *ret, VsError **err);

int protocol_encode_read_file_reply(StrBuf *out, uint64_t id, const ProtocolReadFileReply *r,
                                    const void *data, size_t len);
int protocol_decode_read_file_reply(json_t *obj, ProtocolReadFileReply *ret, VsError **err);

int protocol_encode_write_file_reply(StrBuf *out, uint64_t id, const ProtocolWriteFileReply *r);
int protocol_decode_write_file_reply(json_t *obj, ProtocolWriteFileReply *ret, VsError **err);

int protocol_encode_stat_reply(StrBuf *out, uint64_t id, const ProtocolStatReply *r);
int protocol_decode_stat_reply(json_t *obj, ProtocolStatReply *ret, VsError **err);

int protocol_encode_list_dir_reply(StrBuf *out, uint64_t id, const ProtocolListDirReply *r);
int protocol_decode_list_dir_reply(json_t *obj, ProtocolListDirReply *ret, VsError **err);
void protocol_list_dir_reply_done(ProtocolListDirReply *r);

/* glob and grep: a walk below path, inside the policy (masked paths never
 * read, symlinks never followed), bounded by the limits below; each 0
 * means the worker's default (docs/protocol.md). */
typedef struct ProtocolFindRequest {
        ProtocolRequestHead head;
        const char *path;       /* the directory walked (or, for grep, one file) */
        const char *pattern;    /* glob: a glob (glob.h); grep: a POSIX extended regex, or text with fixed */
        const char *glob;       /* grep: only files whose path below path matches (NULL: all) */
        bool fixed;             /* grep: pattern is text, not a regex */
        bool ignore_case;       /* grep */
        uint64_t context;       /* grep: lines shown before and after each match */
        uint64_t max_results;   /* glob: paths; grep: matching lines */
        uint64_t max_files;     /* entries visited (glob), files read (grep) */
        uint64_t max_bytes;     /* grep: bytes read in all */
        uint64_t deadline_ms;   /* the walk stops after this long */
} ProtocolFindRequest;

int protocol_decode_find_request(json_t *obj, ProtocolFindRequest *ret, VsError **err);
/* r->head.op says which (PROTOCOL_OP_GLOB or PROTOCOL_OP_GREP). */
int protocol_encode_find_request(StrBuf *out, uint64_t id, const ProtocolFindRequest *r);

/* results: glob, [{"path","type","size"}]; grep, [{"path","line","text",
 * "match"}] (match false: a context line), paths relative to the request's
 * path. limit: which limit ended the walk early ("max_results",
 * "max_files", "max_bytes", "deadline", "reply_size"), NULL when it ran to
 * the end. */
typedef struct ProtocolFindReply {
        json_t *results;        /* decode: borrowed, each item checked */
        uint64_t files;         /* entries visited (glob) or files read (grep) */
        uint64_t matches;       /* grep: matching lines found (all shown unless limit) */
        uint64_t files_matched; /* grep */
        uint64_t skipped;       /* grep: binary or over-large files not searched */
        const char *limit;
} ProtocolFindReply;

int protocol_encode_find_reply(StrBuf *out, uint64_t id, const ProtocolFindReply *r);
/* op: the request's, which says the results' shape. */
int protocol_decode_find_reply(json_t *obj, ProtocolOp op, ProtocolFindReply *ret, VsError **err);

int protocol_encode_cancel_reply(StrBuf *out, uint64_t id, bool found);
int protocol_decode_cancel_reply(json_t *obj, bool *ret_found, VsError **err);

/* {"id":N,"ok":true} (shutdown). */
int protocol_encode_ok(StrBuf *out, uint64_t id);

/* ---- long-lived sessions: session_* requests, session_output/session_exit events ----
 *
 * A session is a process that outlives its request: an interactive
 * terminal (a PTY inside the jail) or a background process (pipes). It is
 * named by the id of its session_open request. Its output and its end
 * travel as events, {"event":...,"session":N}, the only worker messages
 * without an "id". */

#define PROTOCOL_SESSION_MAX_WINSIZE 10000

typedef struct ProtocolSessionOpenRequest {
        ProtocolRequestHead head;
        char **argv;          /* non-empty; NULL with connect */
        /* Instead of a process: a TCP connection to 127.0.0.1:connect on the
         * jail's own loopback (a forwarded port); its bytes are the
         * session's input and output, its end the session's. */
        uint64_t connect;
        const char *cwd;      /* NULL = workspace */
        char **env;           /* "K=V" added to init's env (decode: owned strings) */
        bool pty;             /* a terminal (stdin/stdout/stderr on its slave side), else three pipes */
        uint64_t cols, rows;  /* pty: 1..PROTOCOL_SESSION_MAX_WINSIZE */
        uint64_t timeout_ms;  /* 0 = none: a session has no per-command timeout unless asked */
} ProtocolSessionOpenRequest;

/* session_input (raw payload: bytes for its stdin; eof: close stdin after
 * them, pipes only), session_resize (cols, rows), session_signal (signal:
 * 1..64, to the whole process group), session_pause (paused: stop or
 * resume reading its output, for a client that does not keep up). */
typedef struct ProtocolSessionRequest {
        ProtocolRequestHead head;
        uint64_t session;
        bool eof;
        uint64_t cols, rows;
        uint64_t signal;
        bool paused;
} ProtocolSessionRequest;

int protocol_encode_session_open_request(StrBuf *out, uint64_t id, const ProtocolSessionOpenRequest *r);
int protocol_decode_session_open_request(json_t *obj, ProtocolSessionOpenRequest *ret, VsError **err);
void protocol_session_open_request_done(ProtocolSessionOpenRequest *r);
/* op: one of PROTOCOL_OP_SESSION_INPUT/RESIZE/SIGNAL/PAUSE; only its fields
 * are written (data/len: input's raw payload). */
int protocol_encode_session_request(StrBuf *out, uint64_t id, ProtocolOp op, const ProtocolSessionRequest *r,
                                    const void *data, size_t len);
/* Any of the four; ret->head.op says which. */
int protocol_decode_session_request(json_t *obj, ProtocolSessionRequest *ret, VsError **err);

/* session_open's reply: {"id":N,"ok":true,"pid":P} (P in the jail's pid namespace). */
int protocol_encode_session_open_reply(StrBuf *out, uint64_t id, int64_t pid);
int protocol_decode_session_open_reply(json_t *obj, int64_t *ret_pid, VsError **err);

typedef enum ProtocolSessionEventType {
        PROTOCOL_SESSION_OUTPUT, /* raw payload: bytes; stream "stdout" (a PTY's) or "stderr" */
        PROTOCOL_SESSION_EXIT,   /* the process ended and its output is all sent; the session is gone */
        _PROTOCOL_SESSION_EVENT_MAX,
} ProtocolSessionEventType;

typedef struct ProtocolSessionEvent {
        ProtocolSessionEventType type;
        uint64_t session;
        bool is_stderr;     /* output */
        int64_t exit_code;  /* exit: 0..255, 128+N when killed by signal N */
        int64_t signal;     /* exit: N, else 0 */
        bool timed_out;     /* exit: killed at its timeout_ms */
} ProtocolSessionEvent;

/* Is this worker message an event (it has an "event" field)? */
bool protocol_is_event(json_t *obj);
int protocol_encode_session_event(StrBuf *out, const ProtocolSessionEvent *e, const void *data, size_t len);
int protocol_decode_session_event(json_t *obj, ProtocolSessionEvent *ret, VsError **err);
