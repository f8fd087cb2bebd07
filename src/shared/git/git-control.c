/* SPDX-License-Identifier: MIT */
/* Finding a workspace's .git control files on the host (git-control.h). */
#include "git-control.h"
#include "host-make.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "chase.h"
#include "fd-util.h"
#include "git-config.h"
#include "git-scan.h"
#include "path-util.h"
#include "strv.h"

/* Bounds: a hostile tree cannot make the walk unbounded. */
#define MAX_GITDIRS 128
#define MAX_MODULE_DEPTH 6
#define MAX_LINK_FILE 4096

/* What a full gitdir (the main one, a common dir, a submodule's) holds
 * that git executes or obeys. Missing ones get a placeholder unless
 * `placeholder` is false; commondir's says "." because git refuses an
 * empty one, and "." keeps the common directory where it is. */
static const struct {
        const char *name;
        bool dir;
        bool placeholder;
        const char *content;
} full_names[] = {
        { "config", false, true, "" },         /* core.hooksPath, core.fsmonitor, core.sshCommand, aliases... */
        { "config.worktree", false, true, "" }, /* the same, once extensions.worktreeConfig is set */
        { "hooks", true, true, NULL },         /* run by commit, checkout, merge, push... */
        /* info/ itself stays writable: repack's update-server-info
         * writes info/refs there (read-only, every gc prints errors). */
        { "info/attributes", false, true, "" }, /* filter and diff drivers, applied by checkout, diff, add */
        { "info/exclude", false, true, "" },
        { "info/sparse-checkout", false, true, "" },
        /* Rewrites history as git shows it (runs nothing). Read-only where
         * it exists, never created: with the file present, even empty,
         * every host git command prints a deprecation hint. */
        { "info/grafts", false, false, "" },
        { "commondir", false, true, "." },     /* moves config and hooks to another directory */
        { "remotes", true, true, NULL },       /* legacy remote definitions (URLs) */
        { "branches", true, true, NULL },      /* legacy remote definitions (URLs) */
        { "objects/info/alternates", false, true, "" }, /* where objects come from */
};

/* A linked worktree's admin directory (worktrees/NAME): its own links and
 * config; config and hooks come from the common directory. */
static const struct {
        const char *name;
        bool placeholder;
} linked_names[] = {
        { "commondir", false }, /* a placeholder would make it a repository of its own */
        { "gitdir", false },    /* the back link `git worktree prune/repair` obey */
        { "config.worktree", true },
};

#define AS_ANY ((uid_t)-1) /* config_paths' as: any owner's file */

typedef struct Walk {
        VsGitControls *out;
        char **seen; /* gitdirs expanded (real paths) */
        size_t n_seen;
        const char *workspace;
        char **configs; /* config files read (git-config.h) */
        size_t n_configs, config_bytes;
        const char *worktree; /* of the repository whose config is read; NULL: every one (global, system) */
        char **worktrees;     /* the root and each repository's below it with a work tree */
        bool owned;           /* the workspace's owner is known (stat once, at the walk's start) */
        uid_t owner;
} Walk;

/* config_paths' as for the owner's files outside the workspace (its
 * global config, a gitdir its .git names): read by another (a root
 * daemon), only the owner's own files count; by the owner, any. */
static uid_t owner_as(const Walk *w) {
        return w->owned && w->owner != geteuid() ? w->owner : AS_ANY;
}

void git_controls_done(VsGitControls *c) {
        if (!c)
                return;
        for (size_t i = 0; i < c->n; i++)
                free(c->items[i].path);
        free(c->items);
        free(c->error);
        *c = (VsGitControls){ 0 };
}

static int push(VsGitControls *c, char *path, bool dir, bool placeholder, const char *content) {
        if (!path)
                return -ENOMEM;
        for (size_t i = 0; i < c->n; i++)
                if (streq(c->items[i].path, path)) {
                        free(path);
                        return 0;
                }
        VsGitControl *n = realloc(c->items, (c->n + 1) * sizeof *n);
        if (!n) {
                free(path);
                return -ENOMEM;
        }
        c->items = n;
        n[c->n++] = (VsGitControl){ .path = path, .dir = dir, .placeholder = placeholder, .content = content };
        return 0;
}

/* A small regular file read without following a symlink (a .git file, a
 * commondir), its trailing whitespace cut. NULL when absent or not that. */
static char *read_link_file(const char *path) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return NULL;
        char *text = NULL;
        size_t len = 0;
        if (read_fd_all(fd, MAX_LINK_FILE, &text, &len) < 0)
                return NULL;
        while (len > 0 && strchr(" \t\r\n", text[len - 1]))
                text[--len] = 0;
        return text;
}

/* target read from a file in dir: absolute, or relative to dir; the real
 * path of the directory it names, or NULL. */
static char *resolve_from(const char *dir, const char *target) {
        if (!target || !*target)
                return NULL;
        _cleanup_free_ char *j = target[0] == '/' ? strdup(target) : path_join(dir, target);
        if (!j)
                return NULL;
        char *real = realpath(j, NULL);
        struct stat st;
        if (real && (stat(real, &st) < 0 || !S_ISDIR(st.st_mode))) {
                free(real);
                return NULL;
        }
        return real;
}

static bool is_dir_nofollow(const char *path) {
        struct stat st;
        return lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int expand_gitdir(Walk *w, const char *gitdir);

/* ---- what a config names (git-config.h) ---- */

#define MAX_INCLUDE_DEPTH 10 /* git's own */
/* Configs read in one walk (the repositories', what they include, the
 * global and system ones), and their bytes: more fails closed. git has no
 * such bound, but each file costs a read and a parse under the start of
 * every workspace of the daemon: a user's ~/.gitconfig including eight
 * 1 MiB files held another owner's start for 36 s (attack review 12). */
#define MAX_CONFIG_FILES 256
#define MAX_CONFIG_TOTAL (16u << 20)

typedef struct ConfigCtx {
        Walk *w;
        const char *dir; /* of the config file: include paths are relative to it */
        unsigned depth;
        uid_t as; /* config_paths' */
        int r;
} ConfigCtx;

static int config_paths(Walk *w, const char *dir, const char *name, unsigned depth, uid_t as);

/* The path named: "~/" from $HOME, else absolute, else relative to base. */
static char *named_path(const char *value, const char *base) {
        if (!value || !*value)
                return NULL;
        if (strncmp(value, "~/", 2) == 0) {
                const char *home = getenv("HOME");
                _cleanup_free_ char *j = home && home[0] == '/' ? path_join(home, value + 2) : NULL;
                return j ? path_normalize(j) : NULL;
        }
        if (value[0] == '/')
                return path_normalize(value);
        _cleanup_free_ char *j = path_join(base, value);
        return j ? path_normalize(j) : NULL;
}

/* A path the config names is sealed like a control file: read-only where
 * it exists; where it does not, its first missing ancestor gets a
 * placeholder (an empty directory, or an empty file for the named file
 * itself), so the jail can create nothing there. */
static int seal_named(Walk *w, const char *path, bool dir) {
        _cleanup_free_ char *cur = strdup(path);
        if (!cur)
                return -ENOMEM;
        struct stat st;
        bool last = true;
        while (lstat(cur, &st) < 0) {
                if (errno != ENOENT && errno != ENOTDIR)
                        return 0;
                char *slash = strrchr(cur, '/');
                if (!slash || slash == cur)
                        return 0;
                _cleanup_free_ char *parent = strndup(cur, (size_t)(slash - cur));
                if (!parent)
                        return -ENOMEM;
                struct stat pst;
                if (lstat(parent, &pst) == 0)
                        return S_ISDIR(pst.st_mode) ? push(w->out, TAKE_PTR(cur), dir || !last, true, "") : 0;
                free(cur);
                cur = TAKE_PTR(parent);
                last = false;
        }
        return push(w->out, TAKE_PTR(cur), S_ISDIR(st.st_mode), false, NULL);
}

/* Each word of a command line that holds a '/' (a program or script by
 * its path; a bare name is looked up in $PATH) and lies inside the
 * workspace (relative: from the root, where git runs it from there) is
 * sealed like a named file. Words split at blanks, quotes and the
 * shell's operators: a word the split cuts wrong seals a path that does
 * not matter, never misses one that is whole. */
static int seal_command_words(ConfigCtx *c, const char *value) {
        _cleanup_free_ char *copy = value ? strdup(value) : NULL;
        if (!copy)
                return value ? -ENOMEM : 0;
        char *save = NULL;
        int r = 0;
        for (char *w = strtok_r(copy, " \t\n'\"`;|&()<>!=$", &save); r >= 0 && w;
             w = strtok_r(NULL, " \t\n'\"`;|&()<>!=$", &save)) {
                if (!strchr(w, '/'))
                        continue;
                _cleanup_free_ char *path = named_path(w, c->w->workspace);
                if (path && path_is_below_or_equal(path, c->w->workspace) && !streq(path, c->w->workspace))
                        r = seal_named(c->w, path, false);
        }
        return r;
}

static int on_config(const char *key, const char *value, void *userdata) {
        ConfigCtx *c = userdata;
        bool dir, include;
        if (git_config_names_program(key))
                return seal_command_words(c, value);
        if (!git_config_names_path(key, &dir, &include))
                return 0;
        /* include paths are relative to the including file; the others to
         * the work tree git runs in: the repository's, or for the global
         * and system config any of them. */
        int r = 0;
        if (!include && value && value[0] != '/' && strncmp(value, "~/", 2) != 0 && !c->w->worktree) {
                for (char **t = c->w->worktrees; r >= 0 && t && *t; t++) {
                        _cleanup_free_ char *each = named_path(value, *t);
                        if (each)
                                r = seal_named(c->w, each, dir);
                }
                return r;
        }
        _cleanup_free_ char *path = named_path(value, include ? c->dir : c->w->worktree);
        if (!path)
                return 0;
        r = seal_named(c->w, path, dir);
        if (r >= 0 && include) {
                char *slash = strrchr(path, '/');
                if (slash && slash != path) {
                        *slash = 0;
                        r = config_paths(c->w, path, slash + 1, c->depth + 1, c->as);
                }
        }
        return r;
}

/* Reads dir/name (a config git reads: a repository's, an included one, the
 * global and system ones) and seals what it names. A missing one names
 * nothing; one that cannot be read fails closed (err in w->out->error).
 * as (not AS_ANY): read for that uid by a process that is not it (a root
 * daemon, another user's global config and what it includes): only a
 * file as owns is read, any other taken as missing, so that neither its
 * content nor whether it exists reaches as through an error or a start
 * refused (an include of /root/.bash_history told its first line git
 * cannot parse: attack review 11). */
static int config_paths(Walk *w, const char *dir, const char *name, unsigned depth, uid_t as) {
        if (depth > MAX_INCLUDE_DEPTH)
                return 0;
        _cleanup_free_ char *path = path_join(dir, name);
        if (!path)
                return -ENOMEM;
        if (strv_contains(w->configs, path))
                return 0;
        if (++w->n_configs > MAX_CONFIG_FILES) {
                if (!w->out->error && asprintf(&w->out->error,
                                               "%s: more than %d git config files to read (includes, repositories); the "
                                               "paths they may name cannot all be protected",
                                               path, MAX_CONFIG_FILES) < 0)
                        w->out->error = NULL;
                return -EBADMSG;
        }
        int r = strv_extend(&w->configs, path);
        if (r < 0)
                return r;
        /* git follows a symlinked config; below the workspace a link is the
         * jail's (and sealed where it leads): read what it names, never
         * a FIFO or a device. */
        _cleanup_close_ int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (as != AS_ANY && st.st_uid != as))
                return 0;
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        if ((r = read_fd_all(fd, GIT_CONFIG_MAX_BYTES, &text, &len)) < 0) {
                if (!w->out->error && asprintf(&w->out->error, "%s: cannot be read (%s); git config files over %u MiB are refused",
                                               path, strerror(-r), GIT_CONFIG_MAX_BYTES >> 20) < 0)
                        w->out->error = NULL;
                return -EBADMSG;
        }
        if ((w->config_bytes += len) > MAX_CONFIG_TOTAL) {
                if (!w->out->error && asprintf(&w->out->error,
                                               "%s: the git config files to read (includes, repositories) hold more than "
                                               "%u MiB; the paths they may name cannot all be protected",
                                               path, MAX_CONFIG_TOTAL >> 20) < 0)
                        w->out->error = NULL;
                return -EBADMSG;
        }
        unsigned line = 0;
        ConfigCtx c = { .w = w, .dir = dir, .depth = depth, .as = as };
        r = git_config_parse(text, len, on_config, &c, &line);
        if (r == -EINVAL || r == -E2BIG) {
                if (!w->out->error &&
                    (r == -E2BIG ? asprintf(&w->out->error,
                                            "%s:%u: its keys repeat more than %u MiB of section names (a long section "
                                            "over many keys); the paths it may name cannot be protected",
                                            path, line, GIT_CONFIG_MAX_KEY_BYTES >> 20)
                                 : asprintf(&w->out->error,
                                            "%s:%u: a line git config reading here does not understand; the paths "
                                            "it may name cannot be protected",
                                            path, line)) < 0)
                        w->out->error = NULL;
                return -EBADMSG;
        }
        return r;
}

/* The home directory of uid in /etc/passwd, or NULL. Read by hand: the
 * static worker (the ssh remote launcher) links this, and getpwuid()
 * there would need the host's NSS libraries. */
static char *home_of(uid_t uid) {
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        if (read_file_at(AT_FDCWD, "/etc/passwd", 4u << 20, &text, &len) < 0)
                return NULL;
        for (char *line = text, *end; line && *line; line = end ? end + 1 : NULL) {
                end = strchr(line, '\n');
                if (end)
                        *end = 0;
                /* name:pw:uid:gid:gecos:home:shell */
                char *f[7] = { 0 };
                char *p = line;
                for (size_t i = 0; i < 7 && p; i++) {
                        f[i] = p;
                        p = strchr(p, ':');
                        if (p)
                                *p++ = 0;
                }
                char *e = NULL;
                if (f[2] && f[5] && strtoul(f[2], &e, 10) == uid && e && !*e && f[2][0])
                        return strdup(f[5]);
        }
        return NULL;
}

/* The host user's global and system config: the paths they name inside
 * the workspace are the jail's to write too. */
static int global_config_paths(Walk *w) {
        w->worktree = NULL; /* relative paths: from every work tree */
        int r = config_paths(w, "/etc", "gitconfig", 0, AS_ANY);
        _cleanup_free_ char *owner_home = w->owned ? home_of(w->owner) : NULL;
        const char *homes[2] = { getenv("HOME"), owner_home };
        uid_t as[2] = { AS_ANY, owner_as(w) };
        for (size_t i = 0; r >= 0 && i < 2; i++) {
                if (!homes[i] || homes[i][0] != '/')
                        continue;
                _cleanup_free_ char *xdg = path_join(homes[i], ".config/git");
                if (!xdg)
                        return -ENOMEM;
                r = config_paths(w, homes[i], ".gitconfig", 0, as[i]);
                if (r >= 0)
                        r = config_paths(w, xdg, "config", 0, as[i]);
        }
        const char *xdg = getenv("XDG_CONFIG_HOME");
        if (r >= 0 && xdg && xdg[0] == '/') {
                _cleanup_free_ char *d = path_join(xdg, "git");
                r = d ? config_paths(w, d, "config", 0, AS_ANY) : -ENOMEM;
        }
        return r;
}

/* ---- repositories below the root (git-scan.h) ---- */

/* Every repository the host has below the workspace root: its control
 * files sealed like the root's (a nested clone's config, a submodule's
 * .git file). */
static int nested_repos(Walk *w, const VsGitRepos *scan) {
        VsGitRepos own = { 0 };
        int r = 0;
        if (!scan) {
                r = git_scan(w->workspace, &own);
                if (r < 0) {
                        git_repos_done(&own);
                        return r == -ENOENT || r == -ENOTDIR || r == -ELOOP ? 0 : r;
                }
                scan = &own;
        }
        for (size_t i = 0; r >= 0 && i < scan->n; i++) {
                const VsGitRepo *g = &scan->items[i];
                /* Every writable root's, the workspace's or another listed
                 * one's (a repository in rw_paths = ["/srv/shared"] is the
                 * host's git's as much); not a base's stand-in
                 * (git_scan_policy). */
                if (g->dev == 0 && g->ino == 0)
                        continue;
                if (g->kind == VS_GIT_BARE) {
                        r = expand_gitdir(w, g->dir);
                        continue;
                }
                _cleanup_free_ char *dotgit = path_join(g->dir, ".git");
                if (!dotgit) {
                        r = -ENOMEM;
                        break;
                }
                if (streq(g->dir, w->workspace))
                        continue; /* the root's: git_controls_collect() */
                if (g->kind == VS_GIT_DOTGIT) {
                        w->worktree = g->dir;
                        if ((r = strv_extend(&w->worktrees, g->dir)) >= 0)
                                r = expand_gitdir(w, dotgit);
                        w->worktree = w->workspace;
                        continue;
                }
                /* A .git file (or symlink): itself, and what it names. */
                _cleanup_free_ char *text = read_link_file(dotgit);
                const char *target = text && strncmp(text, "gitdir:", 7) == 0 ? text + 7 : NULL;
                while (target && (*target == ' ' || *target == '\t'))
                        target++;
                _cleanup_free_ char *gitdir = resolve_from(g->dir, target);
                r = push(w->out, TAKE_PTR(dotgit), false, false, NULL);
                if (r >= 0)
                        r = strv_extend(&w->worktrees, g->dir);
                if (r >= 0 && gitdir) {
                        w->worktree = g->dir;
                        r = expand_gitdir(w, gitdir);
                        w->worktree = w->workspace;
                }
        }
        git_repos_done(&own);
        return r;
}

static int expand_linked(Walk *w, const char *admin, const char *common) {
        int r = 0;
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(linked_names); i++)
                r = push(w->out, path_join(admin, linked_names[i].name), false, linked_names[i].placeholder, "");
        return r < 0 ? r : common ? expand_gitdir(w, common) : 0;
}

/* fn(w, sub, depth) for each directory (not a symlink) in dir. */
static int each_subdir(Walk *w, const char *dir, unsigned depth, int (*fn)(Walk *, const char *, unsigned)) {
        DIR *d = opendir(dir);
        if (!d)
                return 0;
        int r = 0;
        struct dirent *de;
        while (r >= 0 && (de = readdir(d))) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                _cleanup_free_ char *sub = path_join(dir, de->d_name);
                if (!sub)
                        r = -ENOMEM;
                else if (is_dir_nofollow(sub))
                        r = fn(w, sub, depth);
        }
        closedir(d);
        return r;
}

static int walk_modules(Walk *w, const char *dir, unsigned depth);

/* A submodule gitdir holds HEAD; its name may have slashes, so another
 * directory is walked into. */
static int module_entry(Walk *w, const char *sub, unsigned depth) {
        _cleanup_free_ char *head = path_join(sub, "HEAD");
        struct stat st;
        if (!head)
                return -ENOMEM;
        return lstat(head, &st) == 0 ? expand_gitdir(w, sub) : walk_modules(w, sub, depth + 1);
}

static int walk_modules(Walk *w, const char *dir, unsigned depth) {
        return depth > MAX_MODULE_DEPTH ? 0 : each_subdir(w, dir, depth, module_entry);
}

/* Each linked worktree's admin directory (worktrees/NAME). */
static int worktree_entry(Walk *w, const char *sub, unsigned depth) {
        return expand_linked(w, sub, NULL);
}

static int expand_gitdir(Walk *w, const char *gitdir) {
        for (size_t i = 0; i < w->n_seen; i++)
                if (streq(w->seen[i], gitdir))
                        return 0;
        if (w->n_seen >= MAX_GITDIRS)
                return -E2BIG;
        int r = strv_extend(&w->seen, gitdir);
        if (r < 0)
                return r;
        w->n_seen++;

        /* A commondir naming another directory: this is a linked
         * worktree's admin directory, its config and hooks are there. */
        _cleanup_free_ char *cpath = path_join(gitdir, "commondir");
        if (!cpath)
                return -ENOMEM;
        _cleanup_free_ char *ctext = read_link_file(cpath);
        _cleanup_free_ char *common = resolve_from(gitdir, ctext);
        if (common && !streq(common, gitdir))
                return expand_linked(w, gitdir, common);

        for (size_t i = 0; i < ELEMENTSOF(full_names); i++)
                if ((r = push(w->out, path_join(gitdir, full_names[i].name), full_names[i].dir,
                              full_names[i].placeholder, full_names[i].content)) < 0)
                        return r;
        /* What its config names (hooksPath, include.path, ...). */
        /* A gitdir outside the workspace is where its owner's .git file
         * points: read for the owner, its own files only (a .git naming
         * /root/.ssh told a root host's caller that file's first line
         * git cannot parse). */
        uid_t as = path_is_below_or_equal(gitdir, w->workspace) ? AS_ANY : owner_as(w);
        if ((r = config_paths(w, gitdir, "config", 0, as)) < 0 || (r = config_paths(w, gitdir, "config.worktree", 0, as)) < 0)
                return r;
        _cleanup_free_ char *modules = path_join(gitdir, "modules");
        _cleanup_free_ char *worktrees = path_join(gitdir, "worktrees");
        if (!modules || !worktrees)
                return -ENOMEM;
        if ((r = walk_modules(w, modules, 0)) < 0)
                return r;
        return each_subdir(w, worktrees, 0, worktree_entry);
}

int git_controls_collect(const char *workspace, VsGitControls *ret) {
        return git_controls_collect_scan(workspace, NULL, ret);
}

int git_controls_collect_scan(const char *workspace, const VsGitRepos *scan, VsGitControls *ret) {
        VsGitControls out = { 0 };
        struct stat wst;
        bool owned = stat(workspace, &wst) == 0;
        Walk w = { .out = &out, .workspace = workspace, .worktree = workspace, .owned = owned,
                   .owner = owned ? wst.st_uid : 0 };
        if (strv_extend(&w.worktrees, workspace) < 0)
                return -ENOMEM;
        _cleanup_free_ char *dotgit = path_join(workspace, ".git");
        if (!dotgit)
                return -ENOMEM;
        int r = 0;
        struct stat st;
        if (lstat(dotgit, &st) < 0) {
                if (errno == ENOENT)
                        r = push(&out, TAKE_PTR(dotgit), true, true, NULL);
        } else {
                _cleanup_free_ char *head = path_join(dotgit, "HEAD");
                struct stat hst;
                if (!head)
                        r = -ENOMEM;
                else if (S_ISDIR(st.st_mode) && lstat(head, &hst) < 0 && errno == ENOENT)
                        /* An empty placeholder (or a half-made .git): sealed whole. */
                        r = push(&out, TAKE_PTR(dotgit), true, true, NULL);
                else if (S_ISDIR(st.st_mode))
                        r = expand_gitdir(&w, dotgit);
                else if (S_ISREG(st.st_mode)) {
                        /* "gitdir: PATH" (a linked worktree, a submodule's
                         * checkout): the file itself is a control file (it
                         * says where config and hooks are), and so is what
                         * it names. */
                        _cleanup_free_ char *text = read_link_file(dotgit);
                        const char *target = text && strncmp(text, "gitdir:", 7) == 0 ? text + 7 : NULL;
                        while (target && (*target == ' ' || *target == '\t'))
                                target++;
                        _cleanup_free_ char *gitdir = resolve_from(workspace, target);
                        r = push(&out, TAKE_PTR(dotgit), false, false, NULL);
                        if (r >= 0 && gitdir)
                                r = expand_gitdir(&w, gitdir);
                } else if (S_ISLNK(st.st_mode)) {
                        /* Git follows it: protect where it leads. */
                        _cleanup_free_ char *real = realpath(dotgit, NULL);
                        if (real && is_dir_nofollow(real))
                                r = expand_gitdir(&w, real);
                }
        }
        if (r >= 0)
                r = nested_repos(&w, scan);
        if (r >= 0)
                r = global_config_paths(&w);
        strv_free(w.seen);
        strv_free(w.configs);
        strv_free(w.worktrees);
        if (r < 0) {
                if (r == -EBADMSG && out.error)
                        ret->error = TAKE_PTR(out.error);
                git_controls_done(&out);
                return r;
        }
        *ret = out;
        return 0;
}


/* The repository's owner keeps owning what is made in it (the daemon may
 * be root). A caller that may not give it away (not root, in a shared
 * group's repository) leaves it its own: the placeholder still seals. */
static void chown_like_parent(int pfd, const char *name) {
        struct stat pst, st;
        if (fstat(pfd, &pst) == 0 && fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            (st.st_uid != pst.st_uid || st.st_gid != pst.st_gid) &&
            fchownat(pfd, name, pst.st_uid, pst.st_gid, AT_SYMLINK_NOFOLLOW) < 0)
                return;
}

/* dir, made (mode 0755) with up to levels missing ancestors (objects/info
 * of a .git without objects/), none reached through a symlink. */
static int reach_dir(char *dir, unsigned levels) {
        int fd = chase_open_dir(dir);
        if (fd != -ENOENT || levels == 0)
                return fd;
        char *slash = strrchr(dir, '/');
        if (!slash || slash == dir)
                return fd;
        *slash = 0;
        _cleanup_close_ int up = reach_dir(dir, levels - 1);
        *slash = '/';
        if (up < 0)
                return up;
        int r = host_mkdirat(up, slash + 1, 0755);
        if (r < 0 && r != -EEXIST)
                return r;
        chown_like_parent(up, slash + 1);
        return chase_open_dir(dir);
}

int git_control_item(const VsGitControl *c, const VsHostMaker *maker, VsHostItem *ret) {
        const char *rel;
        const VsHostMaker *m = host_maker_for(maker, c->path, &rel);
        if (!m)
                return 0;
        int text = c->dir ? VS_HOST_TEXT_EMPTY : host_text_index(c->content);
        if (text < 0)
                return -EINVAL;
        *ret = (VsHostItem){ .rel = rel, .flags = VS_HOST_MAKE_PARENTS | (c->dir ? VS_HOST_MAKE_DIR : 0),
                             .text = (VsHostText)text };
        return 1;
}

int git_control_make_placeholder(const VsGitControl *c, const VsHostMaker *maker, VsError **err) {
        VsHostItem it;
        int k = git_control_item(c, maker, &it);
        if (k != 0) {
                int r = k < 0 ? k : maker->make(maker->userdata, it.rel, it.flags, it.text, err);
                if (r < 0 && err && !*err)
                        vs_error_set_kind(err, r, "sandbox_unavailable",
                                          "cannot make the placeholder %s (so the jail cannot create it): %s", c->path,
                                          strerror(-r));
                return r < 0 ? r : 0;
        }
        _cleanup_free_ char *parent = strdup(c->path);
        char *slash = parent ? strrchr(parent, '/') : NULL;
        if (!slash || slash == parent)
                return -ENOMEM;
        *slash = 0;
        const char *name = slash + 1;
        _cleanup_close_ int pfd = reach_dir(parent, 2);
        if (pfd < 0)
                return vs_error_set_kind(err, pfd, "sandbox_unavailable",
                                         "cannot reach %s (a directory reached without symlinks) to protect %s: %s",
                                         parent, name, strerror(-pfd));
        /* A directory its owner made read-only is opened for the make
         * (host_mkdirat): the owner's jail would chmod it and make the
         * name itself (an attack review planted hooks/ in a 0555 .git). */
        if (c->dir) {
                int r = host_mkdirat(pfd, name, 0755);
                if (r < 0 && r != -EEXIST)
                        return vs_error_set_kind(err, r, "sandbox_unavailable",
                                                 "cannot make the placeholder %s (so the jail cannot create it): %s%s",
                                                 c->path, strerror(-r), host_closed_hint(r));
        } else {
                _cleanup_close_ int fd = host_create_at(pfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
                if (fd < 0 && fd != -EEXIST)
                        return vs_error_set_kind(err, fd, "sandbox_unavailable",
                                                 "cannot make the placeholder %s (so the jail cannot create it): %s%s",
                                                 c->path, strerror(-fd), host_closed_hint(fd));
                if (fd >= 0 && c->content && *c->content) {
                        int r = write_all(fd, c->content, strlen(c->content));
                        if (r < 0)
                                return vs_error_set_kind(err, r, "sandbox_unavailable", "writing %s: %s", c->path, strerror(-r));
                }
        }
        chown_like_parent(pfd, name);
        return 0;
}
