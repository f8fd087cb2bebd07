// SPDX-License-Identifier: MIT
// The upload manifest written by src/core/backends/launch-modal.c (version 1): the
// entries below rw_paths/ro_paths that no mask covers, computed by the same
// C glob code the local backend masks with. The bridge uploads exactly these
// and nothing else; it never walks the host itself.
import path from "node:path";

export function parseManifest(text) {
  const m = JSON.parse(text);
  if (!m || m.version !== 1) throw new Error("manifest: unsupported version");
  for (const k of ["rw_roots", "ro_roots", "protected", "entries"])
    if (!Array.isArray(m[k])) throw new Error(`manifest: ${k} must be an array`);
  const seen = new Set();
  const entries = [];
  for (const e of m.entries) {
    if (!e || typeof e.path !== "string" || !path.isAbsolute(e.path) || path.normalize(e.path) !== e.path)
      throw new Error("manifest: an entry without a normalized absolute path");
    if (!["file", "dir", "symlink"].includes(e.kind)) throw new Error(`manifest: ${e.path}: unknown kind`);
    if (!Number.isInteger(e.mode)) throw new Error(`manifest: ${e.path}: mode must be an integer`);
    if (e.kind === "symlink" && typeof e.target !== "string") throw new Error(`manifest: ${e.path}: symlink without target`);
    // A path listed under both an rw and an ro root is uploaded once.
    if (seen.has(e.path)) continue;
    seen.add(e.path);
    entries.push(e);
  }
  return { rwRoots: m.rw_roots, roRoots: m.ro_roots, protected: m.protected, entries };
}

export function isBelowOrEqual(p, root) {
  if (root === "/") return p.startsWith("/");
  return p === root || p.startsWith(root + "/");
}

// Upload order: directories first (parents before children), then files
// and links. Returns { dirs, files, links, executables }.
export function uploadPlan(manifest) {
  const dirs = [], files = [], links = [], executables = [];
  for (const e of manifest.entries) {
    if (e.kind === "dir") dirs.push(e);
    else if (e.kind === "file") {
      files.push(e);
      if (e.mode & 0o111) executables.push(e.path);
    } else links.push(e);
  }
  dirs.sort((a, b) => a.path.split("/").length - b.path.split("/").length || (a.path < b.path ? -1 : 1));
  return { dirs, files, links, executables };
}

// Which files changed in the Sandbox may be written back to the host.
// remote: [{ path, type: "file"|"directory"|"symlink"|..., mode }] found
// below the rw roots since the upload. hostLstat(p) returns "file", "dir",
// "symlink", "other" or null (absent). Rules, each closing a way around the
// masks or the protected paths:
//   - only regular files, only below an rw root (ro roots are never written);
//   - never a protected path or anything below one (vectora.toml, .git/hooks);
//   - a path that exists on the host is written only if it was uploaded as a
//     file: a masked file exists on the host but was never uploaded, so a
//     file of that name in the Sandbox never overwrites it;
//   - a new path only below directories that were uploaded (a masked
//     directory exists on the host but was not uploaded), and never through
//     a host symlink.
export function planWriteBack(manifest, remote, hostLstat) {
  const uploadedFiles = new Set(), uploadedDirs = new Set();
  for (const e of manifest.entries) {
    if (e.kind === "file") uploadedFiles.add(e.path);
    else if (e.kind === "dir") uploadedDirs.add(e.path);
  }
  const write = [], skipped = [];
  for (const r of remote) {
    const p = r.path;
    const skip = (reason) => skipped.push({ path: p, reason });
    if (typeof p !== "string" || !path.isAbsolute(p) || path.normalize(p) !== p) { skip("not a normalized absolute path"); continue; }
    if (r.type !== "file") { skip("not a regular file"); continue; }
    const root = manifest.rwRoots.find((x) => isBelowOrEqual(p, x));
    if (!root) { skip("not below an rw path"); continue; }
    if (manifest.protected.some((x) => isBelowOrEqual(p, x))) { skip("protected path"); continue; }
    const kind = hostLstat(p);
    if (kind !== null) {
      if (kind !== "file" || !uploadedFiles.has(p)) { skip("exists on the host but was not uploaded (masked or excluded)"); continue; }
      write.push({ path: p, mode: (r.mode ?? 0o644) & 0o777, created: false });
      continue;
    }
    // New file: find its nearest existing ancestor on the host.
    let dir = path.dirname(p), ok = true;
    for (;;) {
      const k = hostLstat(dir);
      if (k === null) {
        if (dir === root || !isBelowOrEqual(dir, root)) { ok = false; break; }
        dir = path.dirname(dir);
        continue;
      }
      if (k !== "dir" || !uploadedDirs.has(dir)) ok = false;
      break;
    }
    if (!ok) { skip("its host directory was not uploaded (masked), or is a symlink"); continue; }
    write.push({ path: p, mode: (r.mode ?? 0o644) & 0o777, created: true });
  }
  return { write, skipped };
}
