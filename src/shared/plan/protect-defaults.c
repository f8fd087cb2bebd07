/* SPDX-License-Identifier: MIT */
/* Files the host (its git, editors, agents, direnv, mise) runs or obeys
 * later, at any depth: a subdirectory is opened as a project too. One row
 * each: the glob, what stands in for a missing one at a writable root, and
 * why it is here. A tool's own configuration directory is protected whole:
 * every file there configures that tool, several of them run code, and a
 * read-only directory is the one way to keep a missing file in it from
 * being created (a bind mount needs a mount point; see protect-absent.h).
 * The placeholders were measured with the real tool where Debian has it
 * (direnv, git, ripgrep) and follow the tool's documented behaviour
 * otherwise; docs/config.md lists them. */
#include "protect-defaults.h"

#include <string.h>

#include "policy.h"
#include "macro.h"

#define PROTECT_DEFAULTS(X)                                                                                           \
        X(".envrc", VS_ABSENT_DIR, NULL,                                                                              \
          "direnv evaluates it in the user's shell on cd (a directory of that name: direnv finds no .envrc)")          \
        X(".mcp.json", VS_ABSENT_FILE, "{\"mcpServers\":{}}\n",                                                      \
          "Claude Code starts the MCP servers it names on the host")                                                   \
        X("mise.toml", VS_ABSENT_FILE, "", "mise runs its tasks and hooks and sets its env on cd")                    \
        X(".mise.toml", VS_ABSENT_FILE, "", "mise, as mise.toml")                                                      \
        X(".gitmodules", VS_ABSENT_FILE, "",                                                                           \
          "git clones and updates the submodules it names (URLs, paths) on the host")                                  \
        X(".ripgreprc", VS_ABSENT_FILE, "",                                                                            \
          "ripgrep's flags where RIPGREP_CONFIG_PATH names it (--pre runs a program)")                                 \
        X("**/.vscode", VS_ABSENT_DIR, NULL,                                                                           \
          "VS Code: tasks.json (a folderOpen task runs on open), launch.json, settings.json, mcp.json")                \
        X("**/.claude", VS_ABSENT_DIR, NULL,                                                                           \
          "Claude Code: settings*.json (hooks run on the host), commands/, agents/, hooks/")                           \
        X("**/.cursor", VS_ABSENT_DIR, NULL, "Cursor: mcp.json (servers started on the host), rules/")                 \
        X("**/.codex", VS_ABSENT_DIR, NULL, "Codex: config.toml (MCP servers, sandbox and approval settings)")         \
        X("**/.gemini", VS_ABSENT_DIR, NULL, "Gemini CLI: settings.json (MCP servers, tool settings)")                 \
        X("**/.devcontainer", VS_ABSENT_DIR, NULL,                                                                     \
          "Dev Containers: devcontainer.json (initializeCommand runs on the host), Dockerfile")                         \
        X("**/.idea", VS_ABSENT_REPORT, NULL,                                                                          \
          "JetBrains IDEs: run configurations (workspace.xml, runConfigurations/); an empty .idea is itself a project") \
        X(".devcontainer.json", VS_ABSENT_REPORT, NULL,                                                                \
          "Dev Containers, the root-file form: initializeCommand runs on the host")                                    \
        X("**/.husky", VS_ABSENT_REPORT, NULL,                                                                         \
          "husky: the hooks its sealed core.hooksPath wrapper runs on the host's git commit")                          \
        X(".pre-commit-config.yaml", VS_ABSENT_REPORT, NULL,                                                           \
          "pre-commit: the commands the installed .git/hooks/pre-commit runs (language: system)")                      \
        X("lefthook*.yml", VS_ABSENT_REPORT, NULL, "lefthook: the commands its installed git hooks run")               \
        X("lefthook*.yaml", VS_ABSENT_REPORT, NULL, "lefthook, as lefthook*.yml")                                      \
        X(".lefthook*.yml", VS_ABSENT_REPORT, NULL, "lefthook, as lefthook*.yml")                                      \
        X(".lefthook*.yaml", VS_ABSENT_REPORT, NULL, "lefthook, as lefthook*.yml")                                     \
        X("mise.local.toml", VS_ABSENT_REPORT, NULL, "mise, as mise.toml")                                             \
        X(".mise.local.toml", VS_ABSENT_REPORT, NULL, "mise, as mise.toml")                                            \
        X(".mise", VS_ABSENT_REPORT, NULL, "mise: .mise/config.toml, as mise.toml")                                    \
        X("mise/config.toml", VS_ABSENT_REPORT, NULL, "mise, as mise.toml")                                            \
        X(".config/mise.toml", VS_ABSENT_REPORT, NULL, "mise, as mise.toml")                                           \
        X(".config/mise", VS_ABSENT_REPORT, NULL, "mise: config.toml and conf.d/*.toml, as mise.toml")                 \
        X("**/.roo", VS_ABSENT_REPORT, NULL, "Roo Code: mcp.json (MCP servers started on the host)")                   \
        X("**/.kiro", VS_ABSENT_REPORT, NULL, "Kiro: settings/mcp.json (MCP servers), hooks")                          \
        X("**/.amazonq", VS_ABSENT_REPORT, NULL, "Amazon Q: mcp.json (MCP servers started on the host)")               \
        X("**/.continue", VS_ABSENT_REPORT, NULL, "Continue: mcpServers/ (MCP servers started on the host)")           \
        X("opencode.json", VS_ABSENT_REPORT, NULL, "opencode: MCP servers and commands it runs")                       \
        X(".crush.json", VS_ABSENT_REPORT, NULL, "Crush: MCP servers it starts")                                       \
        X("**/.zed", VS_ABSENT_REPORT, NULL, "Zed: settings.json and tasks.json (tasks run on the host)")              \
        X("**/.helix", VS_ABSENT_REPORT, NULL, "Helix: languages.toml (language servers it starts)")                   \
        X(".nvim.lua", VS_ABSENT_REPORT, NULL, "Neovim runs it with 'exrc' set")                                       \
        X(".exrc", VS_ABSENT_REPORT, NULL, "Vim and Neovim run it with 'exrc' set")                                    \
        X("*.code-workspace", VS_ABSENT_REPORT, NULL, "VS Code workspace files: tasks and settings, as .vscode")  \
        X("**/.hg", VS_ABSENT_REPORT, NULL,                                                                            \
          "Mercurial: hgrc ([hooks], [extensions]), sharedpath and requires (a share's source config) run by the host's hg") \
        X("**/.jj", VS_ABSENT_REPORT, NULL,                                                                            \
          "Jujutsu: repo/config.toml (pager, diff, merge and fix tools, signing program), repo as a pointer file")

#define ROW(g, a, c, why) { .glob = g, .absent = a, .content = c, .reason = why },
#define GLOB(g, a, c, why) g,

const VsProtectDefault VS_PROTECT_DEFAULTS[] = { PROTECT_DEFAULTS(ROW) };
const size_t VS_N_PROTECT_DEFAULTS = ELEMENTSOF(VS_PROTECT_DEFAULTS);
const char *const VS_PROTECT_DEFAULT[] = { PROTECT_DEFAULTS(GLOB) NULL };

const VsProtectDefault *protect_default_find(const char *literal) {
        for (size_t i = 0; i < VS_N_PROTECT_DEFAULTS; i++) {
                const char *g = VS_PROTECT_DEFAULTS[i].glob;
                if (strncmp(g, "**/", 3) == 0)
                        g += 3;
                if (streq(g, literal))
                        return &VS_PROTECT_DEFAULTS[i];
        }
        return NULL;
}
