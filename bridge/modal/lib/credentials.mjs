// SPDX-License-Identifier: MIT
// Modal's own credential sources, checked before the SDK is touched so that
// their absence fails at once with a message that says what to do. Never
// vectora.toml; the values are only read here to see that they exist, and
// are left to the SDK, which reads the same sources.
import { parse as parseToml } from "smol-toml";

export function modalConfigPath(env, home) {
  if (env.MODAL_CONFIG_PATH) return env.MODAL_CONFIG_PATH;
  return `${home}/.modal.toml`;
}

// Returns { source } naming where the credentials were found, or throws an
// Error whose message says what is missing. readFile(path) returns the text
// or throws (ENOENT when the file is absent).
export function findCredentials(env, home, readFile) {
  const id = env.MODAL_TOKEN_ID, secret = env.MODAL_TOKEN_SECRET;
  if (id && secret) return { source: "environment" };
  if (id || secret)
    throw new Error(`${id ? "MODAL_TOKEN_SECRET" : "MODAL_TOKEN_ID"} is not set but ${id ? "MODAL_TOKEN_ID" : "MODAL_TOKEN_SECRET"} is: set both in the daemon's environment`);
  const path = modalConfigPath(env, home);
  let text;
  try {
    text = readFile(path);
  } catch (e) {
    if (e.code === "ENOENT")
      throw new Error(`no Modal credentials: MODAL_TOKEN_ID/MODAL_TOKEN_SECRET are not in the daemon's environment and ${path} does not exist; run \`modal token new\` as the daemon's user or set both variables`);
    throw new Error(`no Modal credentials: cannot read ${path}: ${e.message}`);
  }
  let cfg;
  try {
    cfg = parseToml(text);
  } catch (e) {
    throw new Error(`no Modal credentials: ${path} is not valid TOML: ${e.message.split("\n")[0]}`);
  }
  let name = env.MODAL_PROFILE;
  if (!name) name = Object.keys(cfg).find((k) => cfg[k] && cfg[k].active === true);
  const prof = name && Object.hasOwn(cfg, name) ? cfg[name] : undefined;
  if (!prof)
    throw new Error(`no Modal credentials: ${path} has no ${env.MODAL_PROFILE ? `profile "${env.MODAL_PROFILE}"` : "active profile"}; run \`modal profile activate NAME\` or set MODAL_TOKEN_ID/MODAL_TOKEN_SECRET`);
  if (!prof.token_id || !prof.token_secret)
    throw new Error(`no Modal credentials: profile "${name}" in ${path} lacks token_id/token_secret; run \`modal token new\``);
  return { source: `${path} profile "${name}"` };
}
