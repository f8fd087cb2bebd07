/* SPDX-License-Identifier: MIT */
#pragma once

/* HTTPS to a secret's hosts (issue 31): the workspace's own CA, whose key
 * the daemon makes and keeps (STATE/ca/HEX.key, mode 0600, never in a
 * jail, never with the proxy), and a leaf per secret for that secret's
 * hosts only, which goes to the proxy with the secret. The jail trusts
 * the CA through a bundle (the host's system CAs and the CA) bound at the
 * system path. OpenSSL's libcrypto: the daemon links it for this file
 * alone. */

#include "error.h"
#include "proxy-secrets.h"

/* Loads (or makes, once) the CA of the workspace at ws_path under
 * state_dir, writes the jail's trust bundle as bundle_path (mode 0644,
 * replaced atomically) and puts a fresh leaf certificate and key in each
 * of ps's messages (cert, key). The system CAs are what OpenSSL reads by
 * default in the daemon's environment (SSL_CERT_FILE, else the system
 * file): the jail never sets it. */
int proxy_ca_prepare(const char *state_dir, const char *ws_path, const char *bundle_path, ProxySecrets *ps,
                     VsError **err);
