/* SPDX-License-Identifier: MIT */
#pragma once

/* The jail's home and git identity (issue 30, item 5).
 *
 * Beside the caller's state directory (approval.h's store), in homes/:
 *
 *   homes/HEX/            the workspace's persistent home, bound at
 *                         /home/sandbox: owned by the uid the jail runs
 *                         as, 0700; caches and `git config --global`
 *                         survive a jail restart. HEX is the SHA-256 of
 *                         the workspace's canonical path.
 *   homes/HEX.gitconfig   the host user's git identity (user.name and
 *                         user.email, nothing else), bound read-only at
 *                         VS_JAIL_GITCONFIG and named by GIT_CONFIG_SYSTEM:
 *                         the lowest of git's levels, so the jail's own
 *                         `git config --global` still wins.
 *
 * homes/ is the caller's, 0711: the jail's uid reaches its own home by
 * name and lists nothing (the system store is 0711 too; a store the
 * jail's uid cannot walk through leaves the jail a tmpfs home, said in a
 * note). The host never opens anything inside a home: what is in there is
 * the jail's. */

#include <stdbool.h>
#include <sys/types.h>
#include <time.h>

#include "error.h"

/* Where the identity file appears inside the jail. */
#define VS_JAIL_GITCONFIG "/run/vectora/gitconfig"
/* The identity a jail gets when the host user has none. */
#define VS_JAIL_GIT_NAME "vectora agent"
#define VS_JAIL_GIT_EMAIL "agent@vectora.invalid"
/* A longer name or address is not an identity. */
#define VS_JAIL_IDENT_MAX 256

struct VsHostMaker;

/* The identity of uid from its global git config (~/.config/git/config,
 * then ~/.gitconfig, the later winning as in git): only user.name and
 * user.email, read through a descriptor of the home without following a
 * link, from a regular file uid owns, no includes. What is missing or not
 * a plain one-line value is the default above. Owned by the caller. */
int jail_git_identity(uid_t uid, char **ret_name, char **ret_email);

/* jail_git_identity() in its two halves, for a caller that parses
 * where it cannot read (the monitor's parser, docs/privsep.md). The read:
 * the two files' bytes (text[i] NULL where one gives nothing; the
 * caller frees both); 0 or -ENOMEM. */
typedef struct VsJailIdentTexts {
        char *text[2];
        size_t len[2];
} VsJailIdentTexts;
int jail_git_identity_read(uid_t uid, VsJailIdentTexts *ret);
/* The parse of a VsJailIdentTexts (texts) into a VsJailIdent (ret), the
 * defaults filled in: no system call but memory (git_config_parse's
 * buffers), so it runs under parse-apart.c's filter, whose function it
 * is shaped as (parse_apart(jail_git_identity_parse, &texts, &ident,
 * sizeof ident, ms)). */
typedef struct VsJailIdent {
        char name[VS_JAIL_IDENT_MAX + 1], email[VS_JAIL_IDENT_MAX + 1];
} VsJailIdent;
void jail_git_identity_parse(const void *texts, void *ret);

/* Whether v is one printable line of 1 to VS_JAIL_IDENT_MAX bytes: what
 * git would take as a name or an address and what the rendered config
 * can quote. */
bool jail_git_identity_plain(const char *v);

/* Renders the identity as a git config text. Owned by the caller. */
char *jail_git_identity_text(const char *name, const char *email);

/* Prepares workspace's home (when persistent) and identity file under
 * state_dir for the jail's uid/gid. *ret_home / *ret_gitconfig: host
 * paths, NULL where they could not be made (the jail then gets a private
 * tmpfs home and no identity file; *ret_note says why, or NULL). The
 * identity comes from maker's identity() when it has one (a root
 * daemon's monitor reads it with the owner's file rights), else from
 * jail_git_identity(). */
int jail_home_prepare(const char *state_dir, const char *workspace, uid_t uid, gid_t gid, bool persistent,
                      const struct VsHostMaker *maker, char **ret_home, char **ret_gitconfig, char **ret_note);

/* Removes the homes (and identity files, and first-jails records) under state_dir whose workspace
 * is gone (homes/HEX.workspace names it; the path no longer exists),
 * without following any link the jail left in them. *ret_removed: how
 * many. A vectora-sandboxd starting with the store calls it. */
int jail_homes_prune(const char *state_dir, unsigned *ret_removed);

/* When a jail of workspace first started, as state_dir remembers it
 * (first-jails/HEX, its mtime; kept across daemon restarts and shared by
 * the daemon, the MCP server and the one-shot CLI of one store): a masked
 * link changed since is one a jail could have made (launch.h links_since).
 * 1 and *ret the time recorded; 0 and *ret zero the first time, which
 * records now; a negative errno when the store cannot say (*ret zero). */
int jail_first_start(const char *state_dir, const char *workspace, struct timespec *ret);
