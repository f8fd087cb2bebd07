/* SPDX-License-Identifier: MIT */
#pragma once

/* A workspace's secrets as its proxy gets them (issue 31): for each name
 * in sandbox.secrets, a placeholder made for the jail about to start
 * ("vsph_" and 32 random hex digits), the value from the store of the
 * workspace's owner (secret-store.h), the secret's hosts as rules and
 * the headers besides Authorization it may go in.
 * The jail's environment gets NAME=placeholder; the proxy gets one
 * PROXY_CTL_SECRET message each and puts the value in place of the
 * placeholder only in requests to those hosts. */

#include "error.h"
#include "policy.h"
#include "proxy-ctl.h"

#define PROXY_PLACEHOLDER_PREFIX "vsph_"

typedef struct ProxySecrets {
        ProxyCtlMsg *msgs; /* op PROXY_CTL_SECRET; ws set when sent */
        size_t n;
} ProxySecrets;

/* Loads p's secrets from state_dir and makes new placeholders. */
int proxy_secrets_load(ProxySecrets *ret, const char *state_dir, const VsPolicy *p, VsError **err);
void proxy_secrets_done(ProxySecrets *ps);
/* The audit record of a PROXY_CTL_SECRET_USE (the proxy put the value of
 * secret m->name into a request to m->host): where and what, never the
 * value. uid: the jail's; workspace and generation: the policy's. */
void proxy_secret_use_audit(uid_t uid, const char *workspace, uint64_t generation, const ProxyCtlMsg *m);
/* NAME=placeholder for each, appended to *env, and git credential
 * helpers that print it for its hosts (GIT_CONFIG_COUNT/KEY_n/VALUE_n). */
int proxy_secrets_env(const ProxySecrets *ps, char ***env);
