/* SPDX-License-Identifier: MIT */
/* Forwarded ports (ports = [3000, "8080:80"]): the daemon listens on
 * 127.0.0.1:HOST and relays each accepted connection, over the worker
 * protocol, to a connection the worker opens to 127.0.0.1:JAIL inside the
 * jail's own network namespace (a session with "connect", jail-session.h).
 * Nothing but the listed ports of the jail's loopback is reachable this way,
 * on every backend alike, and the jail gets no new way out: the worker
 * connects in, the host connects to the daemon. The policy refuses ports
 * with network = true (the jail is on the host's loopback already) and
 * under lockdown (no inet sockets in the jail).
 *
 * Flow control both ways: the host side is not read while 512 KiB of its
 * input waits for the worker's acknowledgement; the session is paused while
 * 1 MiB of its output waits to be written to the host side. */
#include <netinet/in.h>
#include <string.h>

#include "jail-session.h"
#include "log.h"
#include "ports.h"
#include "server.h"
#include "worker-link.h"
#include "workspace.h"

#define PORT_IN_HIGH (512u * 1024u)
#define PORT_IN_LOW (128u * 1024u)
#define PORT_OUT_HIGH (1u << 20)
#define PORT_OUT_LOW (256u * 1024u)
#define PORT_OUT_HARD (8u << 20) /* queued past the pause: a worker ignoring it */
/* Open forwarded connections per workspace (the worker has 64 sessions). */
#define PORT_CONN_MAX 32u

typedef struct PortListener PortListener;
typedef struct PortConn PortConn;

struct PortListener {
        uv_tcp_t tcp;
        PortListener *next;
        Workspace *ws;
        uint16_t host, jail;
        unsigned connections; /* open now */
        uint64_t accepted;
        uint64_t refused; /* over PORT_CONN_MAX */
};

struct PortConn {
        JailSession s; /* first: the session callbacks get &s */
        PortConn *next; /* all connections */
        Call call;
        uv_tcp_t tcp;
        PortListener *listener; /* NULL once the listener closed */
        Workspace *ws;
        uint16_t jail;
        unsigned refs;          /* the tcp handle, the open call, each input in flight, the session */
        size_t in_flight, out_queued;
        bool tcp_closing, reading, eof_sent, session_ended;
};

typedef struct PortWrite {
        uv_write_t w;
        PortConn *pc;
        size_t len;
        char data[];
} PortWrite;

static PortListener *all_listeners;
static PortConn *all_conns;

static void conn_unref(PortConn *pc) {
        if (--pc->refs > 0)
                return;
        if (pc->listener)
                pc->listener->connections--;
        for (PortConn **pp = &all_conns; *pp; pp = &(*pp)->next)
                if (*pp == pc) {
                        *pp = pc->next;
                        break;
                }
        free(pc);
}

static void on_tcp_closed(uv_handle_t *h) {
        conn_unref(h->data);
}

static void conn_close_tcp(PortConn *pc) {
        if (pc->tcp_closing)
                return;
        pc->tcp_closing = true;
        uv_close((uv_handle_t *)&pc->tcp, on_tcp_closed);
}

/* The host side is gone or broken: the jail's side of the connection ends too. */
static void conn_end_session(PortConn *pc) {
        if (pc->s.link && !pc->session_ended) {
                ProtocolSessionRequest r = { .signal = 9 };
                jail_session_send(&pc->s, PROTOCOL_OP_SESSION_SIGNAL, &r, NULL, 0, NULL, NULL);
        }
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
        static char b[64 * 1024];
        buf->base = b;
        buf->len = sizeof b;
}

static void on_tcp_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf);

static void update_reading(PortConn *pc) {
        bool want = !pc->tcp_closing && !pc->eof_sent && !pc->session_ended && pc->s.link &&
                    pc->in_flight < (pc->reading ? PORT_IN_HIGH : PORT_IN_LOW);
        if (want && !pc->reading)
                uv_read_start((uv_stream_t *)&pc->tcp, on_alloc, on_tcp_read);
        else if (!want && pc->reading)
                uv_read_stop((uv_stream_t *)&pc->tcp);
        pc->reading = want;
}

typedef struct InputAck {
        PortConn *pc;
        size_t len;
} InputAck;

static void on_input_acked(void *userdata, ApiError code, const char *message) {
        InputAck *a = userdata;
        PortConn *pc = a->pc;
        pc->in_flight -= a->len;
        free(a);
        if (code && !pc->session_ended) {
                /* The jail's side refused the bytes: the stream is broken. */
                conn_end_session(pc);
                conn_close_tcp(pc);
        } else
                update_reading(pc);
        conn_unref(pc);
}

static void send_input(PortConn *pc, const char *data, size_t len, bool eof) {
        InputAck *a = malloc(sizeof *a);
        if (!a) {
                conn_end_session(pc);
                conn_close_tcp(pc);
                return;
        }
        *a = (InputAck){ pc, len };
        pc->in_flight += len;
        pc->refs++;
        ProtocolSessionRequest r = { .eof = eof };
        jail_session_send_acked(&pc->s, PROTOCOL_OP_SESSION_INPUT, &r, data, len, on_input_acked, a);
}

static void on_tcp_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf) {
        PortConn *pc = st->data;
        if (n == 0)
                return;
        if (n < 0) {
                uv_read_stop(st);
                pc->reading = false;
                if (n == UV_EOF && pc->s.link && !pc->session_ended) {
                        /* Half-close: the server sees EOF and may still answer. */
                        pc->eof_sent = true;
                        send_input(pc, NULL, 0, true);
                } else {
                        conn_end_session(pc);
                        conn_close_tcp(pc);
                }
                return;
        }
        send_input(pc, buf->base, (size_t)n, false);
        update_reading(pc);
}

static void on_written(uv_write_t *w, int status) {
        PortWrite *pw = (PortWrite *)w;
        PortConn *pc = pw->pc;
        pc->out_queued -= pw->len;
        free(pw);
        if (status < 0) {
                conn_end_session(pc);
                conn_close_tcp(pc);
        } else if (pc->s.paused && pc->out_queued < PORT_OUT_LOW)
                jail_session_pause(&pc->s, false);
        conn_unref(pc);
}

static void on_output(JailSession *s, bool is_stderr, const char *data, size_t len) {
        PortConn *pc = (PortConn *)s;
        if (pc->tcp_closing || !len)
                return;
        /* Paused at PORT_OUT_HIGH; what the worker had on its way when the
         * pause left is far below this. More is a worker that ignores the
         * pause: the daemon's memory is not its to fill. */
        if (pc->out_queued + len > PORT_OUT_HARD) {
                log_warning("workspace %s: forwarded port %u: the worker sent %zu bytes past its pause; ending the "
                            "connection",
                            pc->ws ? pc->ws->path : "(gone)", pc->jail, pc->out_queued + len - PORT_OUT_HIGH);
                conn_end_session(pc);
                conn_close_tcp(pc);
                return;
        }
        PortWrite *pw = malloc(sizeof *pw + len);
        if (!pw) {
                conn_end_session(pc);
                conn_close_tcp(pc);
                return;
        }
        memcpy(pw->data, data, len);
        pw->pc = pc;
        pw->len = len;
        uv_buf_t b = uv_buf_init(pw->data, (unsigned)len);
        if (uv_write(&pw->w, (uv_stream_t *)&pc->tcp, &b, 1, on_written) < 0) {
                free(pw);
                conn_end_session(pc);
                conn_close_tcp(pc);
                return;
        }
        pc->refs++;
        pc->out_queued += len;
        if (pc->out_queued > PORT_OUT_HIGH)
                jail_session_pause(s, true);
}

static void on_shutdown(uv_shutdown_t *req, int status) {
        PortConn *pc = req->data;
        free(req);
        conn_close_tcp(pc);
        conn_unref(pc);
}

static void on_ended(JailSession *s, const ProtocolSessionEvent *e, ApiError code, const char *why) {
        PortConn *pc = (PortConn *)s;
        pc->session_ended = true;
        update_reading(pc);
        /* What the server wrote last goes out, then the host side closes. */
        uv_shutdown_t *req = malloc(sizeof *req);
        if (!pc->tcp_closing && req && uv_shutdown(req, (uv_stream_t *)&pc->tcp, on_shutdown) == 0) {
                req->data = pc;
                pc->refs++;
        } else {
                free(req);
                conn_close_tcp(pc);
        }
        conn_unref(pc); /* the session's */
}

static const JailSessionOps port_ops = { on_output, on_ended };

static int open_build(Call *c, uint64_t wid, StrBuf *out) {
        PortConn *pc = (PortConn *)((char *)c - offsetof(PortConn, call));
        ProtocolSessionOpenRequest req = { .connect = pc->jail };
        return protocol_encode_session_open_request(out, wid, &req);
}

static void open_done(Call *c, WorkerLink *l, JsonlMsg *m, ApiError code, const char *message) {
        PortConn *pc = (PortConn *)((char *)c - offsetof(PortConn, call));
        ProtocolReplyHead h;
        int64_t pid = 0;
        if (m && protocol_decode_reply_head(m->obj, &h, NULL) == 0 && h.ok &&
            protocol_decode_session_open_reply(m->obj, &pid, NULL) == 0 && !pc->tcp_closing) {
                pc->s.ops = &port_ops;
                pc->refs++; /* the session's, until it ends */
                jail_session_attach(&pc->s, l, c->wid, pid);
                update_reading(pc);
        } else {
                if (m && protocol_decode_reply_head(m->obj, &h, NULL) == 0 && !h.ok)
                        message = h.error_message;
                if (m && h.ok) {
                        /* Opened, but its host side went meanwhile: end it. */
                        JailSession tmp = { 0 };
                        jail_session_attach(&tmp, l, c->wid, pid);
                        jail_session_detach(&tmp);
                }
                log_info("workspace %s: forwarded port %u: %s", pc->ws ? pc->ws->path : "(gone)", pc->jail,
                         message ? message : code ? api_error_name(code) : "the host side closed first");
                conn_close_tcp(pc);
        }
        conn_unref(pc); /* the open call's */
}

static void on_connection(uv_stream_t *server, int status) {
        PortListener *pl = server->data;
        if (status < 0)
                return;
        PortConn *pc = calloc(1, sizeof *pc);
        if (!pc)
                return;
        uv_tcp_init(server->loop, &pc->tcp);
        pc->tcp.data = pc;
        pc->refs = 1; /* the tcp handle */
        pc->listener = pl;
        pc->ws = pl->ws;
        pc->jail = pl->jail;
        pc->next = all_conns;
        all_conns = pc;
        pl->connections++;
        if (uv_accept(server, (uv_stream_t *)&pc->tcp) < 0) {
                conn_close_tcp(pc);
                return;
        }
        pl->accepted++;
        /* Each connection is a session of the worker, whose sessions are
         * shared with the agent's terminals and background processes: the
         * host side (any local user) gets at most half of them. */
        unsigned open = 0;
        for (PortListener *o = all_listeners; o; o = o->next)
                if (o->ws == pl->ws)
                        open += o->connections;
        if (open > PORT_CONN_MAX) {
                if (!pl->refused++)
                        log_warning("workspace %s: forwarded port %u: over %u connections open; closing the new ones",
                                    pl->ws->path, pl->host, PORT_CONN_MAX);
                conn_close_tcp(pc);
                return;
        }
        pc->refs++; /* the open call's */
        pc->call.build = open_build;
        pc->call.done = open_done;
        workspace_submit(pl->ws, &pc->call);
}

static void on_listener_closed(uv_handle_t *h) {
        free(h->data);
}

static void listener_close(PortListener *pl) {
        /* Its connections go on; they only stop counting on it. */
        for (PortConn *pc = all_conns; pc; pc = pc->next)
                if (pc->listener == pl)
                        pc->listener = NULL;
        for (PortListener **pp = &all_listeners; *pp; pp = &(*pp)->next)
                if (*pp == pl) {
                        *pp = pl->next;
                        break;
                }
        uv_close((uv_handle_t *)&pl->tcp, on_listener_closed);
}

static bool wanted(const VsPolicy *p, const PortListener *pl) {
        for (size_t i = 0; p && p->sandboxed && i < p->n_ports; i++)
                if (p->ports[i].host == pl->host && p->ports[i].jail == pl->jail)
                        return true;
        return false;
}

int ports_ensure(Workspace *ws, VsError **err) {
        const VsPolicy *p = ws->policy;
        for (PortListener *pl = all_listeners, *next; pl; pl = next) {
                next = pl->next;
                if (pl->ws == ws && !wanted(p, pl))
                        listener_close(pl);
        }
        for (size_t i = 0; p && p->sandboxed && i < p->n_ports; i++) {
                bool have = false;
                for (PortListener *pl = all_listeners; pl && !have; pl = pl->next)
                        have = pl->ws == ws && pl->host == p->ports[i].host;
                if (have)
                        continue;
                PortListener *pl = calloc(1, sizeof *pl);
                if (!pl)
                        return vs_error_set(err, -ENOMEM, "out of memory");
                pl->ws = ws;
                pl->host = p->ports[i].host;
                pl->jail = p->ports[i].jail;
                uv_tcp_init(ws->srv->loop, &pl->tcp);
                pl->tcp.data = pl;
                struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(pl->host),
                                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
                int r = uv_tcp_bind(&pl->tcp, (const struct sockaddr *)&sa, 0);
                if (r == 0)
                        r = uv_listen((uv_stream_t *)&pl->tcp, 64, on_connection);
                if (r < 0) {
                        uv_close((uv_handle_t *)&pl->tcp, on_listener_closed);
                        return vs_error_set_kind(err, -EADDRINUSE, api_error_name(API_ERROR_SANDBOX_UNAVAILABLE),
                                                 "vectora.toml:%u:%u: sandbox.ports: cannot listen on 127.0.0.1:%u on the "
                                                 "host (%s); free that port or forward another one (\"HOST:%u\")",
                                                 p->ports[i].line, p->ports[i].col, pl->host, uv_strerror(r), pl->jail);
                }
                pl->next = all_listeners;
                all_listeners = pl;
                log_info("workspace %s: forwarding 127.0.0.1:%u to the jail's port %u", ws->path, pl->host, pl->jail);
        }
        return 0;
}

/* Before the workspace's entry is freed (unused, or the daemon exiting):
 * a listener left open would hand its next connection to the freed entry,
 * and hold the port against the entry made again for the same directory. */
void ports_forget(Workspace *ws) {
        for (PortListener *pl = all_listeners, *next; pl; pl = next) {
                next = pl->next;
                if (pl->ws == ws)
                        listener_close(pl);
        }
        for (PortConn *pc = all_conns; pc; pc = pc->next)
                if (pc->ws == ws)
                        pc->ws = NULL;
}

json_t *ports_status(Workspace *ws) {
        if (!ws->policy || !ws->policy->n_ports)
                return NULL;
        json_t *a = json_array();
        for (size_t i = 0; a && i < ws->policy->n_ports; i++) {
                const PortListener *found = NULL;
                for (PortListener *pl = all_listeners; pl && !found; pl = pl->next)
                        if (pl->ws == ws && pl->host == ws->policy->ports[i].host)
                                found = pl;
                json_array_append_new(a, json_pack("{s:i,s:i,s:b,s:i,s:I}", "host", (int)ws->policy->ports[i].host,
                                                   "jail", (int)ws->policy->ports[i].jail, "listening", found != NULL,
                                                   "connections", found ? (int)found->connections : 0, "accepted",
                                                   (json_int_t)(found ? found->accepted : 0)));
        }
        return a;
}
