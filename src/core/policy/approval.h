/* SPDX-License-Identifier: MIT */
#pragma once

/* Loosening needs the host's approval (rule 7; the direnv model for a
 * config file inside a tree an untrusted process can write).
 *
 * The store keeps, per workspace root, the exact vectora.toml text of the
 * last policy the host accepted: on first sight, on every tightening, and
 * on `vectora-sandbox allow`. It lives outside every path a jail can list
 * (a policy listing it is refused). An entry also claims its directory when
 * the file is gone, so deleting vectora.toml cannot hand the tree to a
 * looser ancestor. A vectora.toml nested inside another workspace governs
 * only once approved; until then the enclosing workspace's policy does.
 * Daemon and embedded mode share this code. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <jansson.h>

#include "config.h"
#include "error.h"

/* dir when not NULL; else $VECTORA_SANDBOX_STATE_DIR; else /var/lib/vectora-sandbox as root; else
 * $XDG_STATE_HOME/vectora-sandbox or ~/.local/state/vectora-sandbox; else
 * (no usable home) the runtime directory's "state". Created 0700, owned by
 * the caller, never a symlink. */
int approval_store_dir(const char *dir, char **ret, VsError **err);

/* For a root caller: REL below the store of the user who owns workspace
 * (~/.local/state/vectora-sandbox, the home from the password database,
 * opened and walked without following a link), opened with flags (O_PATH
 * or O_RDONLY), and only if it is that user's regular file. The fd, or
 * -ENOENT (not root, a root-owned workspace, no such file, another kind,
 * another owner's). */
int approval_owner_store_open(const char *workspace, const char *rel, int flags);

/* Which workspace governs dir (config_locate(), plus the two rules above).
 * *ret_dir: dir canonicalized. *ret_pending (may be NULL): when a nested
 * vectora.toml waits for approval, the message saying so, else NULL. */
int approval_locate(const char *store, const char *dir, char **ret_root, char **ret_dir, char **ret_pending,
                    VsError **err);

/* What approval_locate() answered for one path naming a workspace's root
 * (the common request), and the few things that decide that answer: the
 * directory the path leads to (device, inode; the root itself not a
 * symlink), root/vectora.toml present and the root's approval entry
 * present. While those hold the walk would answer the same: the entry
 * ends it at the root, whatever lies above. */
typedef struct ApprovalMemo {
        char *path; /* the path as the caller named it */
        char *root;
        char *cfg;   /* root/vectora.toml */
        char *entry; /* the root's approval entry */
        dev_t dev;
        ino_t ino;
} ApprovalMemo;
#define APPROVAL_MEMO_SLOTS 16

/* approval_locate() answered from memo (an array of APPROVAL_MEMO_SLOTS,
 * zeroed at first) when one slot names dir and its checks still hold: one
 * stat of dir (one more of the root when dir is not spelled as it), one
 * lstat each of vectora.toml and the entry, instead of a realpath, a walk
 * and a SHA-256. Otherwise the walk, whose answer fills a slot when it is
 * the root itself, approved, with nothing pending. Same results.
 * ret_cfg_st (may be NULL): root/vectora.toml's lstat when the answer came
 * from memo and it is a regular file (then it is also its stat, which a
 * caller checking the file for changes need not make again); st_mode 0
 * otherwise. */
int approval_locate_memo(ApprovalMemo *memo, const char *store, const char *dir, char **ret_root, char **ret_dir,
                         char **ret_pending, struct stat *ret_cfg_st, VsError **err);

/* The policy that serves the workspace at root: the file's, when it is as
 * tight as the approved one or the workspace is seen for the first time
 * (then recorded); else the approved one, with *ret_pending saying what
 * the change loosens and the command that approves it. A file that does
 * not load is refused (rule 2) as config_load() says. */
int approval_evaluate(const char *store, const char *root, VsPolicy **ret, char **ret_pending, VsError **err);

/* A first-seen vectora.toml is read once it has not changed for
 * APPROVAL_STABLE_MS (a file the host writes in place must not apply half
 * written: a prefix without its mask line); one still changing after
 * APPROVAL_STABLE_LIMIT_MS is refused for now, as
 * approval_keeps_changing() says (-EAGAIN). */
#define APPROVAL_STABLE_MS 100
#define APPROVAL_STABLE_LIMIT_MS 1000
int approval_keeps_changing(const char *root, VsError **err);

/* approval_evaluate(), but what it records (the entry, its paths, the
 * index) is written and renamed into place without an fsync:
 * *ret_unsynced says whether it recorded anything, and then the caller
 * runs approval_sync() (a blocking call: the daemon's thread pool) before
 * the agent may act on the workspace; until it succeeds a crash may lose
 * the record, and the file as it is then would be the next baseline.
 * With ret_wait_ms, it never sleeps: a vectora.toml seen for the first
 * time that changed less than APPROVAL_STABLE_MS ago (perhaps half
 * written) gives -EAGAIN and *ret_wait_ms, how long until it may be read
 * (approval_evaluate() waits for it, a second at most). */
int approval_evaluate_unsynced(const char *store, const char *root, VsPolicy **ret, char **ret_pending,
                               bool *ret_unsynced, uint64_t *ret_wait_ms, VsError **err);
/* Makes root's record in store durable: fsync of its entry and paths
 * files (those present), of the index (best effort), then of the store
 * directory. A failure is an error (sandbox_unavailable) that the caller
 * must not serve past; calling it again tries again. Blocks. */
int approval_sync(const char *store, const char *root, VsError **err);

typedef struct VsAllowResult {
        char *root;         /* the workspace approved */
        char **loosenings;  /* what the approval loosens (empty: nothing) */
        char **diff;        /* "-line" (approved only) and "+line" (file only) */
        bool changed;       /* the store changed */
        bool sandboxed;     /* the approved policy is sandboxed */
} VsAllowResult;

/* Approves the current vectora.toml of the workspace nearest dir. Refused
 * when the file does not load. */
int approval_allow(const char *store, const char *dir, VsAllowResult *ret, VsError **err);
void approval_allow_result_done(VsAllowResult *r);
/* {"approved": root, "changed", "approved_sandboxed", "loosens": [...],
 * "difference": [...]}: the policy_allow result (docs/protocol.md). */
json_t *approval_allow_to_json(const VsAllowResult *r);
