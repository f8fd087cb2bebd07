/* SPDX-License-Identifier: MIT */
#pragma once

/* The monitor protocol (docs/privsep.md): what the unprivileged server may
 * ask of the root monitor, and the monitor's answers. One message per
 * datagram of a SOCK_SEQPACKET socketpair; descriptors travel beside it in
 * SCM_RIGHTS, never inside it. Two pairs: the loop's channel takes every
 * request and answers each in turn; the pool's takes placeholder and
 * quarantine only and answers each when its work is done, in any order
 * (the reply's id names its request). Binary and fixed: a 16-byte header, then
 * typed fields, each checked against the request's schema (its tags, their
 * kinds, how often each may come, a range or a length) and the request
 * against the monitor's state (OpenSSH's monitor table). No text is
 * parsed: a string is bytes with one NUL at its end, a path a string of
 * normal components. Pure: no OS calls; the fuzz target is
 * tests/fuzz/fuzz-monitor.c.
 *
 * Layout, little-endian:
 *   header  u32 magic "VSMN" | u16 type | u16 n_fields | u64 id
 *   field   u16 tag | u16 zero | u32 len | len bytes
 * A group field's bytes are fields again (one level). The datagram ends
 * exactly after the last field. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "strbuf.h"

#define MONITOR_MAGIC 0x4e4d5356u /* "VSMN" read as little-endian */
#define MONITOR_MSG_MAX 65536     /* a datagram: the biggest request is a jail's plan */
#define MONITOR_FIELDS_MAX 256    /* fields of a message, groups' members included */
#define MONITOR_REPLY 0x8000u     /* a reply's type: the request's, with this bit */
#define MONITOR_MOUNTS_MAX 200    /* mount groups of a jail_spawn */
#define MONITOR_ITEMS_MAX 32      /* a placeholder request's items: one child makes them all */
#define MONITOR_IDENT_MAX 256     /* git_identity's name and email, bytes (jail-home.h VS_JAIL_IDENT_MAX) */
/* cgroup_make's limits: what its schema takes (the server clamps). */
#define MONITOR_PIDS_MAX 4194304ull
#define MONITOR_MEMORY_MIN (1ull << 20)
#define MONITOR_MEMORY_MAX (1ull << 50)
/* A policy's limits as cgroup_make takes them: what the groups get. */
static inline uint64_t monitor_pids_clamp(uint64_t v) {
        return v < 1 ? 1 : v > MONITOR_PIDS_MAX ? MONITOR_PIDS_MAX : v;
}
static inline uint64_t monitor_memory_clamp(uint64_t v) {
        return v < MONITOR_MEMORY_MIN ? MONITOR_MEMORY_MIN : v > MONITOR_MEMORY_MAX ? MONITOR_MEMORY_MAX : v;
}

typedef enum MonitorReq {
        MONITOR_REQ_HELLO = 1,       /* version: the first request, and only then */
        MONITOR_REQ_WS_OPEN,         /* path, uid, gid: the monitor opens it and checks its owner; reply: ws */
        MONITOR_REQ_WS_CLOSE,        /* ws: the handle dropped, its groups removed (not while processes remain) */
        MONITOR_REQ_CGROUP_MAKE,     /* ws, memory_max?, pids_max?: the workspace's groups; reply: their fds */
        MONITOR_REQ_JAIL_SPAWN,      /* ws, gen, uid, gid, flags; fds: the worker's socket end, its stderr, its argv (a sealed memfd); reply: pid */
        MONITOR_REQ_JAIL_KILL,       /* ws, gen: SIGKILL for the jail the monitor started so (its pidfd) */
        MONITOR_REQ_APPROVAL_WRITE,  /* ws, record: written as the workspace's owner, synced */
        MONITOR_REQ_PLACEHOLDER,     /* ws, item (rel, flags, text?) 1..MONITOR_ITEMS_MAX: made below the workspace in turn (host-make.h); reply: count made */
        MONITOR_REQ_STATUS,          /* reply: the monitor's pid, workspaces, jails */
        MONITOR_REQ_SHUTDOWN,        /* every jail killed; the monitor then exits */
        MONITOR_REQ_LOG_REOPEN,      /* fd: the daemon's log, opened again (SIGHUP): the monitor's lines go there */
        MONITOR_REQ_WS_VIEW,         /* ws: reply: a read-only view of it for the server's uid (idmap.h idmap_view) */
        MONITOR_REQ_QUARANTINE,      /* ws, rel (.git or HEAD), dev, ino: renamed NAME.vectora-quarantine[-N]; reply: count N */
        MONITOR_REQ_GIT_IDENTITY,    /* ws: the owner's git identity, read with the owner's file rights (jail-home.h); reply: name, email */
        _MONITOR_REQ_MAX,
        _MONITOR_REQ_INVALID = -1,
} MonitorReq;

typedef enum MonitorState {
        MONITOR_STATE_HELLO,    /* accepts: hello */
        MONITOR_STATE_READY,    /* everything but hello */
        MONITOR_STATE_STOPPING, /* jail_kill, ws_close, status, shutdown */
        _MONITOR_STATE_MAX,
} MonitorState;

/* Whether the monitor in state s answers t (false for an unknown t). */
bool monitor_req_allowed(MonitorState s, MonitorReq t);
const char *monitor_req_to_string(MonitorReq t);

typedef enum MonitorTag {
        MONITOR_F_VERSION = 1, /* u64 */
        MONITOR_F_PATH,        /* an absolute path */
        MONITOR_F_REL,         /* a path relative to the workspace */
        MONITOR_F_UID,         /* u64, below 2^32 - 1 */
        MONITOR_F_GID,
        MONITOR_F_WS,          /* u64: a handle the monitor gave */
        MONITOR_F_GEN,         /* u64: the jail's generation */
        MONITOR_F_MEMORY_MAX,  /* u64 bytes */
        MONITOR_F_PIDS_MAX,    /* u64 */
        MONITOR_F_RECORD,      /* bytes */
        MONITOR_F_MOUNT,       /* group: kind, src or rel, dst */
        MONITOR_F_KIND,        /* u64: a MonitorMountKind */
        MONITOR_F_DST,         /* an absolute path in the jail */
        MONITOR_F_ENV,         /* string NAME=value */
        MONITOR_F_STATUS,      /* reply: u64, 0 or an errno */
        MONITOR_F_MESSAGE,     /* reply: string */
        MONITOR_F_PID,         /* reply: u64 */
        MONITOR_F_COUNT,       /* reply: u64 */
        MONITOR_F_FLAGS,       /* u64: MonitorSpawnFlags */
        MONITOR_F_STEP,        /* reply: u64, the step of a start that failed */
        MONITOR_F_TEXT,        /* u64: a VsHostText (host-make.h), a placeholder's content */
        MONITOR_F_DEV,         /* u64: a file's device as stat shows it */
        MONITOR_F_INO,         /* u64: its inode */
        MONITOR_F_ITEM,        /* group: a placeholder's rel, flags, text? */
        MONITOR_F_NAME,        /* reply: string, git's user.name */
        MONITOR_F_EMAIL,       /* reply: string, git's user.email */
        _MONITOR_F_MAX,
} MonitorTag;

/* jail_spawn's flags. */
typedef enum MonitorSpawnFlags {
        MONITOR_SPAWN_OWN_PID_NS = 1 << 0, /* the jail's outer pid and mount namespaces (launch.h own_pid_ns) */
        _MONITOR_SPAWN_ALL = (1 << 1) - 1,
} MonitorSpawnFlags;

/* A mount of a jail's start. Served: a root-owned workspace's writable
 * trees (RW, at DST its own path), idmapped by the monitor for a jail
 * run as the idmap identity; every other kind, and env, is refused. */
typedef enum MonitorMountKind {
        MONITOR_MOUNT_RO,      /* PATH (a host path the monitor allows) or REL, read-only at DST */
        MONITOR_MOUNT_RW,      /* REL (none: the workspace itself), never PATH: the workspace's own */
        MONITOR_MOUNT_MASK,    /* DST hidden (an empty file or directory over it) */
        MONITOR_MOUNT_TMPFS,   /* DST a fresh tmpfs */
        _MONITOR_MOUNT_MAX,
} MonitorMountKind;

typedef struct MonitorField {
        uint16_t tag;
        int16_t parent;      /* index of the group it is in, or -1 */
        uint32_t len;
        const uint8_t *data; /* borrowed from the datagram */
        uint64_t u64;        /* for u64 fields */
} MonitorField;

typedef struct MonitorMsg {
        uint16_t type; /* a MonitorReq, with MONITOR_REPLY for a reply */
        uint64_t id;
        size_t n_fields;
        MonitorField fields[MONITOR_FIELDS_MAX];
} MonitorMsg;

/* Decodes one datagram against its type's schema: a request (is_reply
 * false) or the reply to one. Strings and paths are borrowed from buf and
 * NUL-terminated there. -EBADMSG with *err set (what was wrong and where)
 * on anything the schema does not allow; *ret is then unspecified. */
int monitor_decode(const void *buf, size_t n, bool is_reply, MonitorMsg *ret, VsError **err);

/* The first field with tag (at top level when parent < 0, else in the
 * group at index parent), or NULL. */
const MonitorField *monitor_field(const MonitorMsg *m, MonitorTag tag, int parent);
/* Its string (the schema made sure of the NUL). */
static inline const char *monitor_field_str(const MonitorField *f) {
        return f ? (const char *)f->data : NULL;
}
/* The index after `after` of the next top-level field with tag, or -1. */
int monitor_next(const MonitorMsg *m, MonitorTag tag, int after);

/* Encoding: begin, put fields (a group between group_begin and group_end),
 * end. Each returns 0 or a negative errno (-ENOBUFS past MONITOR_MSG_MAX or
 * MONITOR_FIELDS_MAX); the message is unusable after a failure. Nothing is
 * checked against the schema here: the decoder on the other side does. */
typedef struct MonitorEnc {
        StrBuf buf;
        size_t n_fields;
        size_t top_fields;
        size_t group_at; /* offset of the open group's field header, or 0 */
        int error;
} MonitorEnc;

void monitor_enc_begin(MonitorEnc *e, uint16_t type, uint64_t id);
void monitor_put_u64(MonitorEnc *e, MonitorTag tag, uint64_t v);
void monitor_put_str(MonitorEnc *e, MonitorTag tag, const char *s);
void monitor_put_bytes(MonitorEnc *e, MonitorTag tag, const void *p, size_t n);
void monitor_group_begin(MonitorEnc *e, MonitorTag tag);
void monitor_group_end(MonitorEnc *e);
/* A placeholder request's item: rel, flags, and text unless it is < 0. */
void monitor_put_item(MonitorEnc *e, const char *rel, unsigned flags, int text);
/* The datagram in e->buf.data, e->buf.len bytes; 0 or the first error. */
int monitor_enc_end(MonitorEnc *e);
void monitor_enc_done(MonitorEnc *e);
