/* SPDX-License-Identifier: MIT */
#pragma once

/* Who makes what the host puts in a workspace before its jail starts: the
 * placeholders of protect-absent.h and git-control.h, git_init's
 * repository (git-init.h). By default the caller itself. A root daemon's
 * server hands what lies below a workspace to the root monitor
 * (docs/privsep.md, `placeholder`), which makes it below the directory it
 * opened itself, by descriptors, never through a symlink, owned like its
 * parent, and only with a text of the table below: the server names a
 * text, never bytes; and it puts aside a repository a jail made
 * (git_quarantine). The maker is passed down the plan's build
 * (jail_plan_make, VsLaunchOptions.maker) and to git_quarantine. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"

/* Every text a placeholder or git_init's repository holds. */
typedef enum VsHostText {
        VS_HOST_TEXT_EMPTY,
        VS_HOST_TEXT_MCP,        /* .mcp.json: no servers */
        VS_HOST_TEXT_DOT,        /* a commondir naming its own directory */
        VS_HOST_TEXT_GIT_CONFIG, /* git_init's .git/config */
        VS_HOST_TEXT_GIT_HEAD,   /* git_init's .git/HEAD */
        _VS_HOST_TEXT_MAX,
} VsHostText;

extern const char *const vs_host_texts[_VS_HOST_TEXT_MAX];
/* text's index in the table (NULL: empty), or -1 when it has none. */
int host_text_index(const char *text);

typedef enum VsHostMakeFlags {
        VS_HOST_MAKE_DIR = 1 << 0,     /* a directory (mode 0755), else a file (0644) holding the text */
        VS_HOST_MAKE_EXCL = 1 << 1,    /* the name must be new: -EEXIST when anything is there */
        VS_HOST_MAKE_PARENTS = 1 << 2, /* the missing directories on the way made too (0755) */
        _VS_HOST_MAKE_ALL = (1 << 3) - 1,
} VsHostMakeFlags;

/* One entry of a batch (make_many). */
typedef struct VsHostItem {
        const char *rel;
        unsigned flags;
        VsHostText text;
} VsHostItem;

typedef struct VsHostMaker {
        const char *workspace; /* canonical; what lies below it goes to make() */
        /* Makes rel (below workspace: normal components) as flags say. 1
         * when made, 0 when something is there already (not EXCL), -ELOOP
         * or -ENOTDIR when a symlink or a file is on the way, else a
         * negative errno, *err saying why where it can. */
        int (*make)(void *userdata, const char *rel, unsigned flags, VsHostText text, VsError **err);
        /* Optional: items made in turn as make() would make each, in one
         * step (the monitor makes them in one child, where a child each
         * was most of a workspace's first start). The number made, or a
         * negative errno at the first that could not be (those before it
         * may be made): the caller then asks make() for each one still
         * missing, which answers for itself. */
        int (*make_many)(void *userdata, const VsHostItem *items, size_t n, VsError **err);
        /* Puts rel (its last component .git or HEAD) aside while it is
         * still dev/ino (git-scan.h git_quarantine): renamed
         * NAME.vectora-quarantine, with "-N" for *ret_n > 0. 0, -ESTALE
         * when it is no longer that entry, -ENOTCONN when the maker cannot
         * serve it any more (the caller then does it itself, where it
         * may), or a negative errno. */
        int (*put_aside)(void *userdata, const char *rel, uint64_t dev, uint64_t ino, unsigned *ret_n, VsError **err);
        /* Optional: the workspace owner's git identity (jail-home.h
         * jail_git_identity), read with the owner's file rights, each a plain value
         * (jail_git_identity_plain); 0 or a negative errno. */
        int (*identity)(void *userdata, char **ret_name, char **ret_email);
        void *userdata;
} VsHostMaker;

/* The name an entry NAME is put aside as (host_put_aside, the monitor's
 * quarantine): NAME.vectora-quarantine, or NAME.vectora-quarantine-N for
 * n > 0; NAME cut to 200 bytes, so the name fits NAME_MAX. */
#define VS_ASIDE_NAME_SIZE 256
void host_aside_name(char to[VS_ASIDE_NAME_SIZE], const char *name, unsigned n);
/* How many names host_aside_name tries in order; past them a link
 * (never a .git or HEAD) is removed instead: its 100 names taken
 * beforehand by the jail kept a refused link in place (attack review 7).
 * Anything else takes a random N above it (its file kept at a protected
 * name, a review of the protected links). */
#define VS_ASIDE_TRIES 100
/* Whether name is one host_aside_name makes (NAME.vectora-quarantine,
 * NAME.vectora-quarantine-N): a link so named is left alone by the masks'
 * link rules and the watch, which a mask matching it (`.env.*`) had made
 * put it aside again at each start, and each rename a new start, without
 * end (attack review 7). */
bool host_aside_named(const char *name);
/* In directory pfd (an O_PATH descriptor will do), name renamed to its
 * put-aside name (host_aside_name, never replacing anything; *ret_n the N
 * used); with the first VS_ASIDE_TRIES names taken and may_remove, removed
 * instead (*ret_n VS_ASIDE_TRIES), else renamed to a random N above it. A directory its owner (this process's file-system uid)
 * made read-only, which kept a link in place (attack review 8), is made
 * writable for it and given its mode back. 0; -ESTALE when name is gone;
 * else a negative errno. The caller checked what name is. */
int host_aside_at(int pfd, const char *name, bool may_remove, unsigned *ret_n);

/* Gives the directory dirfd (O_PATH will do) its owner's read, write and
 * search for a moment, where only its mode stands in the way of what its
 * owner may do there anyway (a chmod first): 1 with *ret_was to put back
 * (host_dir_restore), 0 when nothing would change (the three bits there
 * already, not a directory, a setgid one: the owner's chmod without the
 * group's membership would clear the bit for good, attack review 9), or a
 * negative errno (-EPERM: not the caller's). A placeholder skipped in a
 * directory its owner made read-only was no bar to a jail of that owner,
 * which made it writable and planted the name (.envrc). */
int host_dir_open_up(int dirfd, mode_t *ret_was);
void host_dir_restore(int dirfd, mode_t was);
/* What a refusal r to make a placeholder asks of the user ("" for any
 * other error): no refusal is taken as one the jail would meet too (a
 * jail moved another account's directory aside and planted the name in
 * its own, attack review). */
const char *host_closed_hint(int r);
/* mkdirat and openat (flags with O_CREAT) in dirfd, and once more with
 * the directory opened (host_dir_open_up) when its mode alone refused:
 * 0 or the descriptor, else a negative errno. */
int host_mkdirat(int dirfd, const char *name, mode_t mode);
int host_create_at(int dirfd, const char *name, int flags, mode_t mode);

/* Whether rel is normal components only (no empty one, no . or ..), as
 * the monitor's decoder takes it. */
bool rel_is_normal(const char *rel);

/* m when path (absolute, normalized) lies strictly below its workspace,
 * with *ret_rel pointing into path; else NULL (the caller makes it
 * itself). */
const VsHostMaker *host_maker_for(const VsHostMaker *m, const char *path, const char **ret_rel);
