/* SPDX-License-Identifier: MIT */
#pragma once

/* Repositories a jail makes, in the daemon (git-scan.h says why they
 * matter). The repositories of the writable roots are noted when a worker
 * starts (the host's); a name that makes one (HEAD, objects, refs, .git,
 * commondir) appearing under a watched directory makes the watch ask
 * whether that directory (or its parent) is a new repository, and a new
 * one ends the jail at once; once no process of the workspace's jails is
 * left, every new repository under the writable roots is put aside
 * (renamed, never deleted) and reported. That last sweep also runs
 * whenever a jail ends (idle, recycle, crash), so what the watch cannot
 * see (more directories than it watches, an overflow) is put aside when
 * the jail ends at the latest. Calls nothing above it: workspace.c
 * recycles. */

#include "daemon.h"

typedef struct GitSweep GitSweep;

/* Notes the repositories of ws's writable roots as the host's. */
void git_watch_base(Workspace *ws);
/* Whether dir (absolute) or its parent holds a repository that was not
 * there at the base: those in *ret_new (git_repos_done() it). Two looks,
 * no walk. */
struct VsGitRepos;
bool git_watch_new(Workspace *ws, const char *dir, struct VsGitRepos *ret_new);
/* Puts each of repos aside (git_quarantine()), reporting each through
 * note (its old and new paths). How many. */
size_t git_watch_put_aside(Workspace *ws, const struct VsGitRepos *repos, void (*note)(Workspace *ws, const char *path));
/* With no jail of ws left: every new repository under the writable roots
 * put aside (a walk, on the loop). How many. */
size_t git_watch_sweep(Workspace *ws, void (*note)(Workspace *ws, const char *path));
/* The same on the thread pool (a walk of a big tree takes a while: the
 * loop serves other workspaces meanwhile), owning the base and the roots;
 * note runs for each path and done(ws) once, on the loop, after. false:
 * nothing to do, or done on the loop already (done not called). */
bool git_watch_sweep_start(Workspace *ws, void (*note)(Workspace *ws, const char *path), void (*done)(Workspace *ws));
/* The workspace goes: its base, and its sweep in flight let go. */
void git_watch_free(Workspace *ws);
