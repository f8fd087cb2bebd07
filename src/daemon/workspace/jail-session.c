/* SPDX-License-Identifier: MIT */
/* Sessions in a worker, the daemon's side (jail-jail-session.h): routing the
 * worker's session events to their owners, requests to the worker, and
 * the end of every session with its jail. */
#include <signal.h>
#include <string.h>

#include "jail-session.h"
#include "log.h"
#include "server.h"
#include "worker-link.h"

/* A request to a session, fire and forget: the client that asked (if any)
 * gets the worker's answer. */
typedef struct SessionOp {
        Call call;
        ProtocolOp op;
        ProtocolSessionRequest req;
        char *data;
        size_t len;
        Client *client; /* referenced */
        json_t *id;     /* the client's id, referenced; NULL: no answer wanted */
        JailSessionAckFn acked; /* or this is told (code API_OK: done) */
        void *userdata;
} SessionOp;

/* A session whose owner is gone, kept until the worker says it ended. */
typedef struct Detached {
        JailSession s;
} Detached;

static void op_free(SessionOp *op) {
        if (op->client)
                client_unref(op->client);
        json_decref(op->id);
        free(op->data);
        free(op);
}

static int op_build(Call *c, uint64_t wid, StrBuf *out) {
        SessionOp *op = (SessionOp *)c;
        return protocol_encode_session_request(out, wid, op->op, &op->req, op->data, op->len);
}

static void op_done(Call *c, WorkerLink *l, JsonlMsg *m, ApiError code, const char *message) {
        SessionOp *op = (SessionOp *)c;
        ProtocolReplyHead h = { 0 };
        if (m && protocol_decode_reply_head(m->obj, &h, NULL) == 0 && !h.ok) {
                code = api_error_from_kind(h.error_code_name, API_ERROR_IO);
                message = h.error_message;
        } else if (m)
                code = API_OK;
        if (op->acked)
                op->acked(op->userdata, code, message);
        if (op->client && op->id && !op->client->closed) {
                json_t *o = json_pack("{s:O,s:b}", "id", op->id, "ok", !code);
                if (o && code)
                        json_object_set_new(o, "error", api_error_json(code, message));
                client_send_json(op->client, o, NULL, 0);
        }
        op_free(op);
}

static SessionOp *send_op_full(WorkerLink *l, uint64_t wid, ProtocolOp op_code, const ProtocolSessionRequest *r,
                               const void *data, size_t len, Client *client, json_t *id, JailSessionAckFn acked,
                               void *userdata) {
        SessionOp *op = calloc(1, sizeof *op);
        if (op && len) {
                if ((op->data = malloc(len)))
                        memcpy(op->data, data, len);
                else
                        op = (free(op), NULL);
        }
        if (!op) {
                if (client && id)
                        client_send_json(client, json_pack("{s:O,s:b,s:o}", "id", id, "ok", 0, "error",
                                                           api_error_json(API_ERROR_INTERNAL, "out of memory")),
                                         NULL, 0);
                if (acked)
                        acked(userdata, API_ERROR_INTERNAL, "out of memory");
                return NULL;
        }
        op->op = op_code;
        op->acked = acked;
        op->userdata = userdata;
        op->req = *r;
        op->req.session = wid;
        op->len = len;
        op->call.build = op_build;
        op->call.done = op_done;
        if (client && id) {
                op->client = client;
                client_ref(client);
                op->id = json_incref(id);
        }
        link_send(l, &op->call);
        return op;
}

static void send_op(WorkerLink *l, uint64_t wid, ProtocolOp op_code, const ProtocolSessionRequest *r,
                    const void *data, size_t len, Client *client, json_t *id) {
        (void)send_op_full(l, wid, op_code, r, data, len, client, id, NULL, NULL);
}

void jail_session_attach(JailSession *s, WorkerLink *l, uint64_t wid, int64_t pid) {
        s->link = l;
        s->wid = wid;
        s->pid = pid;
        s->next = l->sessions;
        l->sessions = s;
        l->n_sessions++;
}

static bool usable(JailSession *s) {
        return s->link && s->link->state == LINK_READY && !s->link->draining;
}

void jail_session_send_acked(JailSession *s, ProtocolOp op, ProtocolSessionRequest *r, const void *data, size_t len,
                             JailSessionAckFn acked, void *userdata) {
        if (!usable(s)) {
                acked(userdata, API_ERROR_NOT_FOUND, "the session has ended");
                return;
        }
        (void)send_op_full(s->link, s->wid, op, r, data, len, NULL, NULL, acked, userdata);
}

void jail_session_send(JailSession *s, ProtocolOp op, ProtocolSessionRequest *r, const void *data, size_t len,
                       Client *client, json_t *id) {
        if (!usable(s)) {
                if (client && id)
                        client_send_json(client, json_pack("{s:O,s:b,s:o}", "id", id, "ok", 0, "error",
                                                           api_error_json(API_ERROR_NOT_FOUND, "the session has ended")),
                                         NULL, 0);
                return;
        }
        send_op(s->link, s->wid, op, r, data, len, client, id);
}

void jail_session_pause(JailSession *s, bool paused) {
        if (s->paused == paused)
                return;
        s->paused = paused;
        ProtocolSessionRequest r = { .paused = paused };
        jail_session_send(s, PROTOCOL_OP_SESSION_PAUSE, &r, NULL, 0, NULL, NULL);
}

static void unlink_session(JailSession *s) {
        WorkerLink *l = s->link;
        for (JailSession **p = &l->sessions; *p; p = &(*p)->next)
                if (*p == s) {
                        *p = s->next;
                        l->n_sessions--;
                        break;
                }
        s->link = NULL;
        s->next = NULL;
}

static const JailSessionOps detached_ops = { NULL, NULL };

void jail_session_detach(JailSession *s) {
        if (!s->link) {
                s->ops = NULL;
                return;
        }
        ProtocolSessionRequest r = { .signal = SIGKILL };
        if (usable(s))
                send_op(s->link, s->wid, PROTOCOL_OP_SESSION_SIGNAL, &r, NULL, 0, NULL, NULL);
        /* The worker's events still name it until it reports the end: a
         * small record stands in for the owner's. */
        Detached *d = calloc(1, sizeof *d);
        WorkerLink *l = s->link;
        unlink_session(s);
        s->ops = NULL;
        if (!d)
                return; /* its events then end the link as unknown: the jail is restarted */
        d->s.ops = &detached_ops;
        jail_session_attach(&d->s, l, s->wid, s->pid);
}

static JailSession *find(WorkerLink *l, uint64_t wid) {
        for (JailSession *s = l->sessions; s; s = s->next)
                if (s->wid == wid)
                        return s;
        return NULL;
}

bool jail_session_event(WorkerLink *l, JsonlMsg *m, char **ret_why) {
        ProtocolSessionEvent e;
        _cleanup_(vs_error_freep) VsError *err = NULL;
        if (protocol_decode_session_event(m->obj, &e, &err) < 0) {
                (void)!asprintf(ret_why, "protocol violation: %s", vs_error_message(err));
                return false;
        }
        JailSession *s = find(l, e.session);
        if (!s && l->draining)
                return true; /* ended with the policy it started under (jail_sessions_end) */
        if (!s) {
                (void)!asprintf(ret_why, "protocol violation: an event of session %llu, which is not open",
                                (unsigned long long)e.session);
                return false;
        }
        if (e.type == PROTOCOL_SESSION_OUTPUT) {
                if (s->ops && s->ops->output)
                        s->ops->output(s, e.is_stderr, m->raw ? m->raw : "", m->raw_len);
                return true;
        }
        unlink_session(s);
        if (s->ops == &detached_ops)
                free((Detached *)s); /* s is its first member */
        else if (s->ops && s->ops->ended)
                s->ops->ended(s, &e, API_OK, NULL);
        return true;
}

void jail_sessions_end(WorkerLink *l, ApiError code, const char *why) {
        /* A draining link still runs: its processes must not outlive the
         * policy they started under. Their end events are then ignored. */
        bool live = l->state == LINK_READY;
        while (l->sessions) {
                JailSession *s = l->sessions;
                uint64_t wid = s->wid;
                /* A direct worker (an unsandboxed workspace) has no pid
                 * namespace to take its processes with it: their groups are
                 * killed here, by the pids it gave (the host's). */
                if (l->launch && !l->launch->sandboxed && s->pid > 0)
                        (void)kill(-(pid_t)s->pid, SIGKILL);
                unlink_session(s);
                if (s->ops == &detached_ops)
                        free((Detached *)s); /* s is its first member */
                else if (s->ops && s->ops->ended)
                        s->ops->ended(s, NULL, code, why);
                if (live) {
                        ProtocolSessionRequest r = { .signal = SIGKILL };
                        send_op(l, wid, PROTOCOL_OP_SESSION_SIGNAL, &r, NULL, 0, NULL, NULL);
                }
        }
}
