/* SPDX-License-Identifier: MIT */
#pragma once

/* Which directories of a tree the host's git takes as a repository, and
 * putting aside the ones a jail made (issue 25, section 2).
 *
 * Git's discovery, in each directory from the one it runs in upwards:
 * DIR/.git as a "gitdir: PATH" file (or a symlink, which it follows), then
 * DIR/.git as a directory that passes is_git_directory(), then DIR itself
 * as a bare repository passing the same test (HEAD that reads as a ref or
 * an object name, objects/ and refs/, or a commondir instead of those
 * two). Any of these the jail can make in any directory it may write: no
 * mount forbids creating three names. Whichever one git finds, its config
 * (core.fsmonitor, hooks, core.pager, ...) is then the jail's, and the
 * host's git runs what it names. So the daemon and the embedded CLI note
 * which repositories a tree has before a jail starts (the baseline: the
 * host's), look again when the jail may have made one, and put every new
 * one aside once the jail is gone (git_quarantine()).
 *
 * The test is git's own (setup.c is_git_directory), made a little wider
 * so that it never says "no" where git says "yes": HEAD may be a symlink
 * to anything, objects/ and refs/ any kind of entry. Everything is
 * reached relative to a held descriptor, never through a symlink, and the
 * walk is bounded (depth, entries): a hostile tree cannot make it follow
 * a link out of the workspace or run forever. */

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "error.h"
#include "host-make.h"
#include "sha256.h"

struct stat;

typedef enum VsGitRepoKind {
        VS_GIT_DOTGIT,      /* DIR/.git is a directory that is a repository */
        VS_GIT_DOTGIT_LINK, /* DIR/.git is a file ("gitdir: PATH") or a symlink: git follows it */
        VS_GIT_BARE,        /* DIR itself is a repository */
} VsGitRepoKind;

typedef struct VsGitRepo {
        char *dir;          /* absolute */
        VsGitRepoKind kind;
        dev_t dev;          /* of DIR/.git (the first two kinds) or of DIR (bare) */
        ino_t ino;
        bool link;          /* DIR/.git is a symlink: the jail can replace it (no mount pins one) */
        /* A link's text, its SHA-256 in hex (git_link_digest): a link the
         * jail made in its place after removing it may take the same inode
         * number, and only what it says tells them apart. */
        char text[SHA256_HEX_LEN + 1];
} VsGitRepo;

/* A protected name (policy.h protect, the plan's protected paths) that
 * is a symlink where the jail writes, as the start found it: the plan
 * seals where it leads, but no mount holds the link itself, so the jail
 * can rename its own file, directory or link over it (or exchange them,
 * renameat2), and the next start would seal that as the host's (an attack
 * review: `.envrc -> cfg/rc`, `.vscode -> shared-vscode`). */
typedef struct VsGitLink {
        char *path;         /* absolute, canonical parent */
        dev_t dev;
        ino_t ino;
        char text[SHA256_HEX_LEN + 1]; /* as VsGitRepo's */
} VsGitLink;

typedef struct VsGitRepos {
        VsGitRepo *items;
        size_t n;
        size_t dirs;    /* directories looked at */
        bool truncated; /* a bound was hit: some directories were not looked at */
        /* The protected links at the start, swept with the repositories
         * (git_links_put_aside): the host's baseline of what the jail may
         * not replace. */
        VsGitLink *links;
        size_t n_links;
} VsGitRepos;

#define GIT_SCAN_MAX_DEPTH 128
#define GIT_SCAN_MAX_DIRS 1000000

/* Every repository in root and below (root itself included), appended to
 * *out (zero it first). Reads only: openat/fstatat with O_NOFOLLOW, at
 * most 256 bytes of each HEAD. 0, or a negative errno when root cannot be
 * opened as a directory without following a symlink. */
int git_scan(const char *root, VsGitRepos *out);
/* The same for one directory (no walk): what DIR and DIR/.git make. */
int git_scan_dir(const char *dir, VsGitRepos *out);
void git_repos_done(VsGitRepos *r);

struct VsPolicy;
/* git_scan() of each writable root of p (the jail writes nowhere else).
 * base = true: the repositories the host has before a jail starts, plus a
 * stand-in (dev and ino 0) for the root's .git, which is never the
 * jail's (sealed or pinned; a repository appearing in the placeholder is
 * the host's `git init`), unless it is a symlink. */
int git_scan_policy(const struct VsPolicy *p, bool base, VsGitRepos *out);
/* What base = true adds to a scan of p's writable roots: the stand-in for
 * the root's .git. The daemon's and the CLI's jail starts scan with the
 * mask walk (mask-walk.h, mask_walk_all: one walk of each root for the
 * masks, the protect globs and the repositories) and add this. */
int git_scan_base_standin(const struct VsPolicy *p, VsGitRepos *out);
/* What the directory dfd (dir, absolute) and its .git make: appended to
 * *out. Only where a ".git" or a "HEAD" is among its entries can it find
 * one. 0 or -ENOMEM. */
int git_scan_look(int dfd, const char *dir, VsGitRepos *out);

/* Whether r is the host's: base holds the same kind with the same
 * identity (wherever it is now), or base had a .git in that same
 * directory that was no symlink (the jail cannot replace it: sealed or
 * pinned; a symlink it can, with a rename over it or an exchange, so
 * only the same identity counts there). */
bool git_repos_has(const VsGitRepos *base, const VsGitRepo *r);

/* Puts r aside so git no longer takes it as a repository: a .git file or
 * symlink, or the HEAD of a repository directory (DIR/.git/HEAD, or
 * DIR/HEAD for a bare one: the directory renamed whole would still be a
 * repository under its new name) renamed to NAME.vectora-quarantine[-N]
 * beside it (RENAME_NOREPLACE, the directory reached from / without
 * following a symlink, checked to be the one noted). Nothing is
 * deleted: the host user can look at it and take it back. *ret_moved (may
 * be NULL): the new absolute path. -ESTALE when the entry is no longer the
 * one noted. maker (host-make.h; NULL: this process) moves it when it
 * lies below its workspace, by the same rules. */
int git_quarantine(const VsGitRepo *r, const VsHostMaker *maker, char **ret_moved, VsError **err);

/* The SHA-256 (hex) of what the symlink name in dfd says, into text; ""
 * when it cannot be read. */
void git_link_digest(int dfd, const char *name, char text[SHA256_HEX_LEN + 1]);

/* Notes path (absolute; st its lstat, a symlink, or NULL: looked at
 * here, and nothing noted unless it is one) in base->links, once; a link
 * whose parent is no directory reached from / without a symlink is not
 * noted (the sweep could not reach it either). 0 or -ENOMEM. */
int git_links_note(VsGitRepos *base, const char *path, const struct stat *st);

/* What stands now at each of base's links' paths that is not that link (a
 * file, a directory, another link), where could_write(its directory, ud)
 * says the jail writes (NULL: everywhere): put aside as git_quarantine
 * puts a .git (NAME.vectora-quarantine beside it, never replacing, the
 * entry checked to be the one found; a link with every name taken is
 * removed), by maker where it serves. before(ud) (may be NULL) is called
 * once ahead of the first: the caller ends a jail still running, which
 * could put it back. Each put aside: its path and where it went ("" when
 * removed) appended to *moved; each that could not be: its path to
 * *failed (either may be NULL). Returns how many were put aside. A link
 * the jail removed is left missing: the next start's placeholder stands
 * in for it. */
size_t git_links_put_aside(const VsGitRepos *base, const VsHostMaker *maker,
                           bool (*could_write)(const char *dir, void *ud), void (*before)(void *ud), void *ud,
                           char ***moved, char ***failed);
