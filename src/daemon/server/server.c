/* SPDX-License-Identifier: MIT */
/* The unix socket server: accept with a peer uid check, JSON-lines framing,
 * bounded output queues with backpressure. */
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "log.h"
#include "peer.h"
#include "server.h"
#include "time-util.h"

static void server_on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);

typedef struct WriteReq {
        uv_write_t w;
        Client *client;
        size_t len;
        char *data;
} WriteReq;

void client_ref(Client *c) {
        c->refs++;
}

static void account_input(Client *c);

static void client_free(Client *c) {
        Server *srv = c->srv;
        jsonl_reader_free(c->reader);
        c->reader = NULL;
        c->in_held = 0;
        account_input(c);
        if (srv->in_leader == c)
                srv->in_leader = NULL;
        if (c->spool_fd >= 0)
                srv->spool_bytes -= c->spool_w - c->spool_r;
        safe_close(c->spool_fd);
        strbuf_done(&c->after_spool);
        free(c);
}

void client_unref(Client *c) {
        if (!c || --c->refs > 0)
                return;
        client_free(c);
}

static void on_client_closed(uv_handle_t *h) {
        Client *c = h->data;
        client_unref(c);
}

static void take_unqueue(Client *c);

static void client_close(Client *c) {
        if (c->closed)
                return;
        c->closed = true;
        c->closing = true;
        take_unqueue(c);
        c->srv->handlers->client_closing(c);
        Server *srv = c->srv;
        if (c->prev)
                c->prev->next = c->next;
        else
                srv->clients = c->next;
        if (c->next)
                c->next->prev = c->prev;
        srv->n_clients--;
        uv_close((uv_handle_t *)&c->pipe, on_client_closed);
}

static uint64_t unsent(const Client *c);

void client_maybe_close(Client *c) {
        /* A half-closed client's requests still waiting their turn are
         * taken first; while some are being taken, client_process looks
         * again at its end (a call answered at once looks from
         * request_finish, when the client's last replies may be out and the
         * rest of its requests not yet taken: attack review 16 lost them). */
        if (c->parsing || c->take_queued)
                return;
        if (!c->closed && c->closing && unsent(c) == 0 && c->inflight == 0)
                client_close(c);
}

/* One read of a client other than the leader takes at most CLIENT_READ_MAX:
 * the reader offers the whole rest of a raw payload, and one read returns
 * what the peer's socket holds (its SO_SNDBUF, 4 MiB or more where the
 * sysctl or the client raised it), so 20 big senders overshot the input
 * bound by 80 MiB once the budget was reached. The leader's reads are
 * bounded too (LEADER_READ_MAX): a socket may hold far more than its
 * SO_SNDBUF (a read took 49 MiB, 228 ms of copies and page faults in
 * which no other client was served). */
static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf) {
        Client *c = h->data;
        void *p = NULL;
        size_t n = 0;
        buf->base = NULL;
        buf->len = 0;
        /* A client whose requests wait their turn (take_queue) is read
         * only while what it holds is under one read: a queued flooder read
         * on, 64 KiB a turn while 4 calls were taken, filled the input
         * budget (attack review 16). Put off, not stopped: stopping and
         * restarting its reads each time it entered and left the queue cost
         * a quarter of a flood's throughput. */
        bool held = c->take_queued && c->reader && jsonl_reader_pending(c->reader) >= CLIENT_READ_MAX;
        c->yielded = held || !server_read_turn(c->srv, &c->read_turn);
        /* Put off, or out of memory: libuv calls server_on_read with UV_ENOBUFS. */
        if (c->yielded || jsonl_reader_get_buffer(c->reader, CLIENT_READ_MAX, &p, &n) < 0)
                return;
        buf->base = p;
        size_t most = c == c->srv->in_leader ? LEADER_READ_MAX : CLIENT_READ_MAX;
        buf->len = n < most ? n : most;
}

bool server_read_turn(Server *srv, uint64_t *last) {
        /* 0: turns are not counted (a Server never started, as the unit
         * tests' links use): every read goes. */
        if (srv->turn == 0)
                return true;
        if (*last == srv->turn)
                return false;
        *last = srv->turn;
        return true;
}

static void on_turn(uv_prepare_t *p) {
        Server *srv = p->data;
        srv->turn++;
        srv->took = 0;
}

/* ---- input budgets ---- */

static size_t client_in_bytes(const Client *c) {
        return c->in_held + (c->reader ? jsonl_reader_pending(c->reader) : 0);
}

static void resume_all(Server *srv);
static void on_lead_timer(uv_timer_t *t);

/* Over the budget only the leader is read, so a leader that sends nothing
 * (it stopped mid-message, or stopped reading its replies so its requests
 * are not taken) would hold every other big upload until it hangs up;
 * electing another instead would hold a second partial message, and one
 * per staller after it, past the bound. A leader the daemon could not read
 * for this long is disconnected (`busy`), its partial request dropped. */
#define LEADER_STALL_MS 30000
#define LEADER_CHECK_MS 250

static bool may_take(Client *c);

static bool may_lead(const Client *c) {
        return !c->closed && !c->closing && c->reader && jsonl_reader_pending(c->reader) >= CLIENT_IN_FREE;
}

/* Over the global budget the biggest holder among the paused ones is let
 * on alone, so that some message always completes (and its input turns
 * into a call that ends) instead of every big sender waiting for the
 * others forever. One whose requests may be taken now goes first. */
static void elect_leader(Server *srv) {
        Client *l = srv->in_leader;
        if (l && may_lead(l))
                return;
        Client *best = NULL;
        bool best_ready = false;
        for (Client *c = srv->clients; c; c = c->next) {
                if (!may_lead(c))
                        continue;
                bool ready = may_take(c);
                if (!best || ready > best_ready ||
                    (ready == best_ready && jsonl_reader_pending(c->reader) > jsonl_reader_pending(best->reader))) {
                        best = c;
                        best_ready = ready;
                }
        }
        srv->in_leader = best;
        if (!best || best == l)
                return;
        srv->in_leader_ms = now_ms();
        if (!srv->lead_timer_on) {
                srv->lead_timer_on = true;
                uv_timer_start(&srv->lead_timer, on_lead_timer, LEADER_CHECK_MS, LEADER_CHECK_MS);
        }
        client_update_reading(best);
}

static void on_lead_timer(uv_timer_t *t) {
        Server *srv = t->data;
        Client *l = srv->in_leader;
        if (!l || srv->in_bytes < SERVER_IN_MAX) {
                srv->lead_timer_on = false;
                uv_timer_stop(t);
                return;
        }
        /* One whose whole requests wait their turn sends nothing because
         * it is not read: not stalled. */
        if (l->take_queued)
                srv->in_leader_ms = now_ms();
        if (now_ms() - srv->in_leader_ms < LEADER_STALL_MS)
                return;
        log_warning("client %d (uid %u) sent nothing for %d ms while the only one read over the input budget; "
                    "disconnecting", (int)l->pid, (unsigned)l->uid, LEADER_STALL_MS);
        srv->handlers->bad_line(l, API_ERROR_BUSY,
                                "the daemon's input budget is full and this connection, read first, sent nothing "
                                "for 30 s mid-request (or did not read its replies); its partial request is dropped: "
                                "send whole requests without pausing");
        if (l->reading)
                uv_read_stop((uv_stream_t *)&l->pipe);
        l->reading = false;
        l->closing = true;
        srv->in_leader = NULL;
        /* Its partial message goes now (the error reply may still wait
         * for it to read), and the next holder leads. */
        jsonl_reader_free(l->reader);
        l->reader = NULL;
        account_input(l); /* still over the budget: the next holder leads */
        client_maybe_close(l);
}

/* Keeps srv->in_bytes the sum of what every client holds. */
static void account_input(Client *c) {
        Server *srv = c->srv;
        size_t now = client_in_bytes(c);
        bool was_over = srv->in_bytes >= SERVER_IN_MAX;
        srv->in_bytes = srv->in_bytes - c->in_counted + now;
        c->in_counted = now;
        if (srv->in_bytes >= SERVER_IN_MAX)
                elect_leader(srv);
        else if (was_over)
                resume_all(srv);
}

/* Over the global budget the leader is read until its message is whole,
 * whatever the total: small holders (under CLIENT_IN_FREE each) go on
 * reading and may push the total past any fixed mark, and a leader stopped
 * there left every big holder stopped for good: no message completed, no
 * hang-up was seen, the input stayed counted forever. The leader's own
 * bound is its message (at most a line and a raw payload, under
 * CLIENT_IN_MAX), so the total stays under SERVER_IN_MAX, the small
 * holders' CLIENT_IN_FREE each, and one message. */
_Static_assert(JSONL_MAX_LINE + 1 + JSONL_MAX_RAW < CLIENT_IN_MAX, "a leader must be able to hold one whole message");

static bool input_allowed(const Client *c) {
        const Server *srv = c->srv;
        size_t mine = client_in_bytes(c);
        if (mine >= CLIENT_IN_MAX)
                return false;
        if (srv->in_bytes < SERVER_IN_MAX || mine < CLIENT_IN_FREE)
                return true;
        return c == srv->in_leader;
}

void client_release_input(Client *c, size_t bytes) {
        c->in_held -= bytes < c->in_held ? bytes : c->in_held;
        account_input(c);
}

/* ---- taking requests ---- */

static uint64_t unsent(const Client *c) {
        return c->out_bytes + (c->spool_fd >= 0 ? c->spool_w - c->spool_r : 0);
}

/* Whether another request of c may be taken now: under the in-flight cap,
 * its unsent replies under the mark (with hysteresis). */
static bool may_take(Client *c) {
        if (c->out_paused && unsent(c) < CLIENT_OUT_LOW)
                c->out_paused = false;
        else if (!c->out_paused && unsent(c) >= CLIENT_OUT_HIGH)
                c->out_paused = true;
        return !c->closed && (!c->closing || c->eof) && c->inflight < CLIENT_MAX_INFLIGHT && !c->out_paused;
}

/* ---- taking in turn ---- */

/* A loop turn takes at most CLIENT_TURN_TAKE requests of one client and
 * SERVER_TURN_TAKE of all; a client holding more waits in the server's
 * take queue, served in order by an idle handle (while it runs the loop
 * polls without sleeping), CLIENT_TURN_TAKE at a time and SERVER_TURN_TAKE
 * a turn, then back to its end. Reading stays bounded as before (one read
 * per client and turn, the input budgets): what waits here is requests
 * already read. Before, one turn took every request its reads brought:
 * each one's first look at its workspace costs about 100 us, and 32
 * clients sending 250 calls each, resent as answered, held another
 * client's one call 2.6-2.8 s. A queued client's reads take nothing
 * until its turn comes, so it cannot pass those queued before it. */
static void on_take_idle(uv_idle_t *h);

static bool take_allowed(Client *c) {
        Server *srv = c->srv;
        if (srv->turn == 0) /* a Server never started (the unit tests' links) */
                return true;
        if (srv->shutting_down) /* the drain answers what is buffered, so much in all */
                return srv->drained < SERVER_DRAIN_TAKE;
        if (c->take_queued)
                return false;
        if (c->take_turn != srv->turn) {
                c->take_turn = srv->turn;
                c->took = 0;
        }
        return c->took < CLIENT_TURN_TAKE && srv->took < SERVER_TURN_TAKE;
}

static void take_queue(Client *c) {
        Server *srv = c->srv;
        if (c->take_queued)
                return;
        c->take_queued = true;
        c->take_next = NULL;
        c->take_prev = srv->take_tail;
        if (srv->take_tail)
                srv->take_tail->take_next = c;
        else
                srv->take_head = c;
        srv->take_tail = c;
        if (!uv_is_active((uv_handle_t *)&srv->take_idle))
                uv_idle_start(&srv->take_idle, on_take_idle);
}

static void take_unqueue(Client *c) {
        if (!c->take_queued)
                return;
        Server *srv = c->srv;
        c->take_queued = false;
        if (c->take_prev)
                c->take_prev->take_next = c->take_next;
        else
                srv->take_head = c->take_next;
        if (c->take_next)
                c->take_next->take_prev = c->take_prev;
        else
                srv->take_tail = c->take_prev;
        c->take_next = c->take_prev = NULL;
}

static void on_take_idle(uv_idle_t *h) {
        Server *srv = h->data;
        srv->took = 0;
        while (srv->take_head && srv->took < SERVER_TURN_TAKE) {
                Client *c = srv->take_head;
                take_unqueue(c);
                c->take_turn = srv->turn;
                c->took = 0;
                client_ref(c);
                client_update_reading(c); /* takes its share; back to the end if it holds more */
                client_unref(c);
        }
        if (!srv->take_head)
                uv_idle_stop(h);
}

static void server_on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);
static void hup_watch(Client *c);

/* Takes the complete requests already buffered, as many as may go: at the
 * in-flight cap or the reply mark, parsing stops, not only reading. */
static void client_process(Client *c) {
        if (c->parsing)
                return;
        c->parsing = true;
        client_ref(c);
        while (may_take(c)) {
                if (!take_allowed(c)) {
                        /* Stopping, only the cap refuses: the rest stays
                         * untaken (queued, it was taken again each pass). */
                        if (c->reader && jsonl_reader_pending(c->reader) > 0 && !c->srv->shutting_down)
                                take_queue(c);
                        break;
                }
                JsonlMsg m = JSONL_MSG_INIT;
                _cleanup_(vs_error_freep) VsError *err = NULL;
                size_t before = jsonl_reader_pending(c->reader);
                int r = jsonl_reader_next(c->reader, &m, &err);
                if (r == -EAGAIN)
                        break;
                c->took++;
                c->srv->took++;
                c->srv->drained += c->srv->shutting_down;
                c->msg_bytes = before - jsonl_reader_pending(c->reader);
                if (r == -EBADMSG) {
                        c->srv->handlers->bad_line(c, API_ERROR_BAD_REQUEST, vs_error_message(err));
                        continue;
                }
                if (r < 0) {
                        /* Framing lost (line over 1 MiB, bad raw): say why, then
                         * hang up once the reply is out. */
                        log_warning("client %d (uid %u): %s; disconnecting", (int)c->pid, (unsigned)c->uid,
                                    vs_error_message(err));
                        c->srv->handlers->bad_line(c, r == -EMSGSIZE ? API_ERROR_REQUEST_TOO_LARGE
                                                                     : API_ERROR_BAD_REQUEST,
                                                   vs_error_message(err));
                        if (c->reading)
                                uv_read_stop((uv_stream_t *)&c->pipe);
                        c->reading = false;
                        c->closing = true;
                        client_maybe_close(c);
                        break;
                }
                c->srv->handlers->request(c, &m);
                c->msg_bytes = 0;
        }
        c->parsing = false;
        if (c->reader)
                account_input(c);
        client_maybe_close(c);
        hup_watch(c); /* a half-closed client's calls taken now, or still queued */
        client_unref(c);
}

void client_update_reading(Client *c) {
        if (c->closed)
                return;
        client_process(c);
        /* Stopping, nothing more is read: the drain takes what was (a reply
         * to a request it answered came back here and read on without
         * bound: attack review 18). */
        if (c->closed || c->closing || c->srv->shutting_down)
                return;
        bool want = may_take(c) && input_allowed(c);
        if (want == c->reading)
                return;
        c->reading = want;
        if (want) {
                uv_read_start((uv_stream_t *)&c->pipe, on_alloc, server_on_read);
        } else
                uv_read_stop((uv_stream_t *)&c->pipe);
}

static void resume_all(Server *srv) {
        if (srv->resuming)
                return;
        srv->resuming = true;
        for (Client *c = srv->clients, *next; c; c = next) {
                next = c->next;
                if (!c->reading)
                        client_update_reading(c);
        }
        srv->resuming = false;
}

/* ---- replies: memory, then a bounded spool ---- */

static int queue_write(Client *c, char *data, size_t len);

/* Moves spooled replies back to the socket while the memory queue is low. */
static void spool_drain(Client *c) {
        Server *srv = c->srv;
        while (c->spool_fd >= 0 && !c->closed && c->out_bytes < CLIENT_OUT_LOW) {
                if (c->spool_r == c->spool_w) {
                        /* Caught up: later replies go straight out again,
                         * after the small ones that waited for the spool. */
                        c->spool_fd = safe_close(c->spool_fd);
                        c->spool_r = c->spool_w = 0;
                        if (c->after_spool.len > 0) {
                                size_t n = c->after_spool.len;
                                (void)queue_write(c, strbuf_steal(&c->after_spool), n);
                        }
                        return;
                }
                size_t n = c->spool_w - c->spool_r < SPOOL_CHUNK ? (size_t)(c->spool_w - c->spool_r) : SPOOL_CHUNK;
                char *buf = malloc(n);
                ssize_t k = buf ? pread(c->spool_fd, buf, n, (off_t)c->spool_r) : -1;
                if (k <= 0) {
                        log_error("client %d: reading back its spooled replies: %s; disconnecting", (int)c->pid,
                                  buf ? (k < 0 ? strerror(errno) : "short file") : "out of memory");
                        free(buf);
                        client_close(c);
                        return;
                }
                c->spool_r += (uint64_t)k;
                srv->spool_bytes -= (uint64_t)k;
                if (queue_write(c, buf, (size_t)k) < 0)
                        return;
        }
}

/* Appends a reply to the client's spool file (made on first use). */
static int spool_append(Client *c, const char *data, size_t len) {
        Server *srv = c->srv;
        if (c->spool_w - c->spool_r + len > CLIENT_SPOOL_MAX) {
                log_warning("client %d (uid %u) left over %llu MiB of replies unread; disconnecting", (int)c->pid,
                            (unsigned)c->uid, (unsigned long long)(CLIENT_SPOOL_MAX >> 20));
                return -ENOBUFS;
        }
        if (c->spool_fd < 0) {
                static const char *const dirs[] = { "/var/tmp", "/tmp" };
                for (size_t i = 0; i < ELEMENTSOF(dirs) && c->spool_fd < 0; i++)
                        c->spool_fd = open(dirs[i], O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
                if (c->spool_fd < 0) {
                        log_error("client %d: cannot make a reply spool file (%m); disconnecting", (int)c->pid);
                        return -errno;
                }
                c->spool_r = c->spool_w = 0;
        }
        for (size_t off = 0; off < len;) {
                ssize_t k = pwrite(c->spool_fd, data + off, len - off, (off_t)(c->spool_w + off));
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0) {
                        log_error("client %d: spooling a reply: %m; disconnecting", (int)c->pid);
                        return k < 0 ? -errno : -EIO;
                }
                off += (size_t)k;
        }
        c->spool_w += len;
        srv->spool_bytes += len;
        return 0;
}

static void on_write(uv_write_t *w, int status) {
        WriteReq *wr = (WriteReq *)w;
        Client *c = wr->client;
        c->out_bytes -= wr->len;
        c->srv->out_bytes -= wr->len;
        free(wr->data);
        free(wr);
        if (status < 0 && !c->closed) {
                log_debug("client %d: write failed: %s", (int)c->pid, uv_strerror(status));
                client_close(c);
        } else if (!c->closed) {
                spool_drain(c);
                if (!c->closed && c->closing)
                        client_maybe_close(c);
                else if (!c->closed) {
                        client_update_reading(c);
                        c->srv->handlers->client_resumed(c);
                }
        }
        client_unref(c);
}

/* Queues data (taken) to the socket. */
static int queue_write(Client *c, char *data, size_t len) {
        /* Written at once what the socket takes: a queued write's
         * completion makes libuv re-arm the descriptor (an epoll_ctl per
         * reply). uv_try_write() refuses while anything is queued, so the
         * bytes keep their order; an error is left for uv_write() to report. */
        uv_buf_t now = uv_buf_init(data, (unsigned)len);
        int k = uv_try_write((uv_stream_t *)&c->pipe, &now, 1);
        size_t done = k > 0 ? (size_t)k : 0;
        if (done == len) {
                free(data);
                return 0;
        }
        WriteReq *wr = calloc(1, sizeof *wr);
        if (!wr) {
                /* Out of memory: this client loses its reply; the daemon goes on. */
                log_error("out of memory queueing a reply; closing client");
                free(data);
                client_close(c);
                return -ENOMEM;
        }
        len -= done;
        wr->len = len;
        wr->data = data;
        wr->client = c;
        uv_buf_t b = uv_buf_init(wr->data + done, (unsigned)wr->len);
        int r = uv_write(&wr->w, (uv_stream_t *)&c->pipe, &b, 1, on_write);
        if (r < 0) {
                free(wr->data);
                free(wr);
                client_close(c);
                return r;
        }
        client_ref(c);
        c->out_bytes += len;
        c->srv->out_bytes += len;
        return 0;
}

/* Queues one framed message (takes the buffer's content). Dropped when the
 * client is gone. A negative errno when it could not be spooled (the
 * client is closed only for -ENOBUFS, too much left unread). */
static int client_send(Client *c, StrBuf *msg) {
        if (!c || c->closed || msg->len == 0) {
                strbuf_clear(msg);
                return 0;
        }
        Server *srv = c->srv;
        /* In order: once anything is spooled, later replies follow it. */
        bool spool = c->spool_fd >= 0 || c->out_bytes + msg->len > CLIENT_OUT_MAX ||
                     (c->out_bytes > 0 && srv->out_bytes + msg->len > SERVER_OUT_MAX);
        if (spool) {
                int r = spool_append(c, msg->data, msg->len);
                strbuf_clear(msg);
                /* A client that leaves too much unread is gone; a spool the
                 * disk cannot take (full, failing) costs this reply only. */
                if (r == -ENOBUFS) {
                        client_close(c);
                        return r;
                }
                if (r < 0)
                        return r;
                /* The spool is drained as writes complete; with none in
                 * flight (one reply over CLIENT_OUT_MAX on its own, such as
                 * a 64 MiB file_read) nothing would ever start it. */
                if (c->out_bytes < CLIENT_OUT_LOW)
                        spool_drain(c);
                if (!c->closed && !c->parsing)
                        client_update_reading(c);
                return 0;
        }
        size_t len = msg->len;
        if (queue_write(c, strbuf_steal(msg), len) < 0)
                return 0;
        if (!c->parsing)
                client_update_reading(c);
        return 0;
}

/* The reply that takes the place of one the spool could not take: small,
 * kept in memory, after what is spooled already (a spooled reply may be
 * half written to the socket, so nothing may cut in). */
static void send_spool_failure(Client *c, json_t *id, size_t len, int r) {
        char msg[256];
        snprintf(msg, sizeof msg,
                 "the reply (%zu bytes) could not be kept until read: the reply spool failed (%s); ask again for less "
                 "(offset and limit, or max_output), or free space in /var/tmp",
                 len, strerror(-r));
        json_t *e = json_pack("{s:O,s:b,s:o}", "id", id ? id : json_null(), "ok", 0, "error", api_error_json(API_ERROR_IO, msg));
        _cleanup_strbuf_ StrBuf out = STRBUF_INIT;
        if (!e || jsonl_encode(e, NULL, 0, &out) < 0) {
                json_decref(e);
                client_close(c);
                return;
        }
        json_decref(e);
        log_warning("client %d: a reply of %zu bytes could not be spooled (%s); it gets an error instead", (int)c->pid,
                    len, strerror(-r));
        if (c->spool_fd >= 0) {
                if (strbuf_append(&c->after_spool, out.data, out.len) < 0)
                        client_close(c);
                return;
        }
        size_t n = out.len;
        (void)queue_write(c, strbuf_steal(&out), n);
}

void client_send_json(Client *c, json_t *obj, const void *raw, size_t raw_len) {
        client_send_json_texts(c, obj, NULL, 0, raw, raw_len);
}

void client_send_json_texts(Client *c, json_t *obj, const JsonlText *texts, size_t n_texts, const void *raw,
                            size_t raw_len) {
        _cleanup_strbuf_ StrBuf out = STRBUF_INIT;
        if (!obj)
                return;
        int r = n_texts ? jsonl_encode_texts(obj, texts, n_texts, raw, raw_len, &out)
                        : jsonl_encode(obj, raw, raw_len, &out);
        /* Keep the id, so the client knows which call failed. */
        json_t *id = json_incref(json_object_get(obj, "id"));
        json_decref(obj);
        if (r < 0) {
                log_warning("encoding a reply: %s", strerror(-r));
                bool big = r == -EMSGSIZE || r == -ENOBUFS;
                json_t *e = json_pack("{s:o,s:b,s:o}", "id", id ? id : json_null(), "ok", 0, "error",
                                      big ? api_error_json(API_ERROR_TOO_LARGE,
                                                       json_string_length(id) > 64 * 1024
                                                               ? "the reply is over the 1 MiB line limit because of its long \"id\"; use a shorter one"
                                                               : "the reply is over the 1 MiB line limit; ask for raw bytes (\"binary\": true)")
                                          : api_error_json(API_ERROR_INTERNAL, "the reply could not be encoded"));
                id = NULL;
                if (e && jsonl_encode(e, NULL, 0, &out) < 0)
                        strbuf_clear(&out);
                json_decref(e);
        }
        size_t len = out.len;
        r = client_send(c, &out);
        if (r < 0 && r != -ENOBUFS && !c->closed)
                send_spool_failure(c, id, len, r);
        json_decref(id);
}

/* At EOF: did the client close its socket (nobody reads the replies: its
 * calls are cancelled) or only shut down its writing side (it still reads
 * them)? A unix stream socket whose peer closed reports POLLHUP, one whose
 * peer did shutdown(SHUT_WR) only POLLRDHUP. */
static bool peer_gone(Client *c) {
        uv_os_fd_t fd;
        if (uv_fileno((uv_handle_t *)&c->pipe, &fd) < 0)
                return true;
        struct pollfd p = { .fd = fd, .events = POLLIN | POLLRDHUP };
        return poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLERR));
}

/* A half-closed client may still go away while its calls run (closing
 * the socket raises no event once its EOF was read): looked at each
 * HUP_CHECK_MS while any such client has calls in flight. A cancelled
 * command is gone within a second (issue 30), so the look comes well
 * within that; it costs one poll() per such client. */
#define HUP_CHECK_MS 200

/* A half-closed client with calls in flight, or with requests still
 * waiting their turn (take_queue: its EOF was read before they were
 * taken, and a command taken later ran on for a client gone: attack
 * review 17). */
static bool hup_watched(const Client *c) {
        return c->eof && !c->closed && (c->inflight > 0 || c->take_queued);
}

static void on_hup_timer(uv_timer_t *t) {
        Server *srv = t->data;
        bool waiting = false;
        for (Client *c = srv->clients, *next; c; c = next) {
                next = c->next; /* closing c unlinks it, not the next */
                if (!hup_watched(c))
                        continue;
                if (peer_gone(c))
                        client_close(c);
                else
                        waiting = true;
        }
        if (!waiting) {
                srv->hup_timer_on = false;
                uv_timer_stop(t);
        }
}

/* Starts the look at hup_watched clients (none in a Server never started). */
static void hup_watch(Client *c) {
        Server *srv = c->srv;
        if (!hup_watched(c) || srv->hup_timer_on || srv->turn == 0)
                return;
        srv->hup_timer_on = true;
        uv_timer_start(&srv->hup_timer, on_hup_timer, HUP_CHECK_MS, HUP_CHECK_MS);
}

static void server_on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
        Client *c = s->data;
        if (nread == UV_ENOBUFS && c->yielded) {
                c->yielded = false;
                return;
        }
        if (nread == UV_ENOBUFS) {
                log_error("client %d: out of memory reading a request; closing", (int)c->pid);
                client_close(c);
                return;
        }
        if (nread < 0) {
                /* EOF of a half-closed client: answer what is in flight,
                 * then close (it still reads its replies); requests still
                 * buffered are taken first. A client gone for good (or an
                 * error) closes now: client_closing cancels its calls. */
                uv_read_stop(s);
                c->reading = false;
                if (nread != UV_EOF || peer_gone(c)) {
                        c->closing = true;
                        client_close(c);
                        return;
                }
                c->eof = c->closing = true;
                client_ref(c);
                client_process(c); /* and watches whether it goes (hup_watch) */
                client_unref(c);
                return;
        }
        if (nread == 0)
                return;
        jsonl_reader_commit(c->reader, (size_t)nread);
        if (c == c->srv->in_leader)
                c->srv->in_leader_ms = now_ms();
        client_ref(c);
        client_process(c);
        client_update_reading(c);
        client_unref(c);
}

static void on_connection(uv_stream_t *l, int status) {
        Server *srv = l->data;
        if (status < 0) {
                log_warning("accept: %s", uv_strerror(status));
                return;
        }
        Client *c = calloc(1, sizeof *c);
        if (!c || jsonl_reader_new(&c->reader) < 0) {
                /* The pending connection stays in the backlog; a later accept
                 * retries once memory is back. */
                log_error("out of memory accepting a client");
                free(c);
                return;
        }
        c->srv = srv;
        c->refs = 1;
        c->spool_fd = -EBADF;
        uv_pipe_init(srv->loop, &c->pipe, 0);
        c->pipe.data = c;
        if (uv_accept(l, (uv_stream_t *)&c->pipe) < 0) {
                uv_close((uv_handle_t *)&c->pipe, on_client_closed);
                return;
        }
        /* Link it first so client_close() can unlink it. */
        c->next = srv->clients;
        if (c->next)
                c->next->prev = c;
        srv->clients = c;
        srv->n_clients++;

        uv_os_fd_t fd;
        struct ucred cred;
        socklen_t len = sizeof cred;
        if (uv_fileno((uv_handle_t *)&c->pipe, &fd) < 0 ||
            getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
                log_warning("cannot read the peer's credentials (%m); refusing the connection");
                client_close(c);
                return;
        }
        c->uid = cred.uid;
        c->pid = cred.pid;
        if (!peer_uid_allowed(cred.uid)) {
                log_warning("refused a connection from uid %u (pid %d): only uid %u and root may use this daemon",
                            (unsigned)cred.uid, (int)cred.pid, (unsigned)geteuid());
                srv->handlers->bad_line(c, API_ERROR_FORBIDDEN, "this daemon serves only its own user");
                c->closing = true;
                client_maybe_close(c);
                return;
        }
        char why[256];
        int k = peer_check_namespaces(fd, cred.pid, why, sizeof why);
        if (k < 0) {
                log_warning("refused a connection from uid %u: %s", (unsigned)cred.uid, why);
                srv->handlers->bad_line(c, API_ERROR_FORBIDDEN,
                                     k == -EPERM ? "this daemon serves no jail: connect from outside any sandbox"
                                                 : "the peer could not be identified; connect from a process outside any sandbox");
                c->closing = true;
                client_maybe_close(c);
                return;
        }
        if (srv->shutting_down || srv->n_clients > srv->opt.max_clients) {
                log_warning("refused a connection from pid %d: %s", (int)cred.pid,
                            srv->shutting_down ? "shutting down" : "too many connections");
                srv->handlers->bad_line(c, API_ERROR_BUSY, srv->shutting_down ? "the daemon is shutting down"
                                                                   : "too many connections; try again later");
                c->closing = true;
                client_maybe_close(c);
                return;
        }
        log_debug("client pid %d uid %u connected", (int)cred.pid, (unsigned)cred.uid);
        client_update_reading(c);
}

/* An existing socket file: refuse to replace a live daemon's, remove a stale one. */
static int check_stale(const char *path, VsError **err) {
        struct stat st;
        if (lstat(path, &st) < 0)
                return errno == ENOENT ? 0 : vs_error_set(err, -errno, "%s: %m", path);
        if (!S_ISSOCK(st.st_mode))
                return vs_error_set(err, -EEXIST, "%s exists and is not a socket; remove it or pick another --socket", path);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return vs_error_set(err, -errno, "socket: %m");
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
        int r = connect(fd, (struct sockaddr *)&sa, sizeof sa);
        safe_close(fd);
        if (r == 0)
                return vs_error_set(err, -EADDRINUSE, "another vectora-sandboxd is listening on %s", path);
        if (unlink(path) < 0 && errno != ENOENT)
                return vs_error_set(err, -errno, "removing the stale socket %s: %m", path);
        return 0;
}

int server_start(Server *srv, VsError **err) {
        srv->turn = 1; /* a stream's read_turn starts at 0: its first read goes */
        uv_prepare_init(srv->loop, &srv->turn_prep);
        srv->turn_prep.data = srv;
        uv_prepare_start(&srv->turn_prep, on_turn);
        uv_unref((uv_handle_t *)&srv->turn_prep);
        uv_idle_init(srv->loop, &srv->take_idle);
        srv->take_idle.data = srv;
        uv_unref((uv_handle_t *)&srv->take_idle); /* an active idle handle makes the loop poll without sleeping */
        uv_timer_init(srv->loop, &srv->lead_timer);
        srv->lead_timer.data = srv;
        uv_unref((uv_handle_t *)&srv->lead_timer); /* a helper: never what keeps the loop running */
        uv_timer_init(srv->loop, &srv->hup_timer);
        srv->hup_timer.data = srv;
        uv_unref((uv_handle_t *)&srv->hup_timer);
        int r = uv_pipe_init(srv->loop, &srv->listener, 0);
        if (r < 0)
                return vs_error_set(err, r, "uv_pipe_init: %s", uv_strerror(r));
        srv->listener.data = srv;
        srv->listening = true;

        /* systemd socket activation: fd 3. */
        const char *lp = getenv("LISTEN_PID"), *lf = getenv("LISTEN_FDS");
        if (lp && lf && (pid_t)atol(lp) == getpid() && atoi(lf) >= 1) {
                unsetenv("LISTEN_PID");
                unsetenv("LISTEN_FDS");
                unsetenv("LISTEN_FDNAMES");
                fcntl(3, F_SETFD, FD_CLOEXEC);
                r = uv_pipe_open(&srv->listener, 3);
                if (r < 0)
                        return vs_error_set(err, r, "using the socket passed by systemd: %s", uv_strerror(r));
        } else {
                if (strlen(srv->opt.socket_path) >= sizeof(((struct sockaddr_un *)0)->sun_path))
                        return vs_error_set(err, -ENAMETOOLONG, "socket path too long: %s", srv->opt.socket_path);
                r = check_stale(srv->opt.socket_path, err);
                if (r < 0)
                        return r;
                /* Bound under a temporary name and renamed into place once
                 * listening: a client that sees the socket file can connect
                 * (no "connection refused" between bind and listen). The
                 * instance lock makes the name ours alone. */
                _cleanup_free_ char *tmp = NULL;
                if (asprintf(&tmp, "%s.%d", srv->opt.socket_path, (int)getpid()) < 0)
                        return vs_error_set(err, -ENOMEM, "out of memory");
                const char *bind_path = strlen(tmp) < sizeof(((struct sockaddr_un *)0)->sun_path) ? tmp
                                                                                                 : srv->opt.socket_path;
                (void)unlink(tmp);
                /* Created 0600 from the start: no window where others may connect. */
                mode_t old = umask(0177);
                r = uv_pipe_bind(&srv->listener, bind_path);
                umask(old);
                if (r < 0)
                        return vs_error_set(err, r, "binding %s: %s", bind_path, uv_strerror(r));
                r = uv_listen((uv_stream_t *)&srv->listener, 128, on_connection);
                if (r < 0) {
                        (void)unlink(bind_path);
                        return vs_error_set(err, r, "listening on %s: %s", srv->opt.socket_path, uv_strerror(r));
                }
                if (bind_path != srv->opt.socket_path && rename(bind_path, srv->opt.socket_path) < 0) {
                        r = -errno;
                        (void)unlink(bind_path);
                        return vs_error_set(err, r, "moving the socket into place at %s: %m", srv->opt.socket_path);
                }
                return 0;
        }
        r = uv_listen((uv_stream_t *)&srv->listener, 128, on_connection);
        if (r < 0)
                return vs_error_set(err, r, "listening on %s: %s", srv->opt.socket_path, uv_strerror(r));
        return 0;
}

void server_stop_listening(Server *srv) {
        if (srv->listening) {
                srv->listening = false;
                uv_close((uv_handle_t *)&srv->listener, NULL);
                if (srv->opt.socket_path)
                        unlink(srv->opt.socket_path);
        }
}

/* Reads end; the requests already read and still waiting their turn are
 * taken now, each answered shutting_down at once (tools_handle), as far as
 * the client reads its replies (may_take's mark) and SERVER_DRAIN_TAKE in
 * all (the input budgets hold up to a million small requests: answering
 * each would hold the stop for seconds). Dropped unanswered, they left a
 * client waiting on ids it never heard of again. */
void server_drain_clients(Server *srv) {
        for (Client *c = srv->clients, *next; c; c = next) {
                next = c->next;
                if (c->reading)
                        uv_read_stop((uv_stream_t *)&c->pipe);
                c->reading = false;
                take_unqueue(c);
                client_ref(c);
                client_process(c);
                c->closing = true;
                client_maybe_close(c);
                client_unref(c);
        }
        if (srv->drained >= SERVER_DRAIN_TAKE)
                log_warning("stopping: %u requests already read were answered shutting_down; the rest read were not",
                            SERVER_DRAIN_TAKE);
}

void server_stop(Server *srv) {
        server_stop_listening(srv);
        if (!uv_is_closing((uv_handle_t *)&srv->turn_prep))
                uv_close((uv_handle_t *)&srv->turn_prep, NULL);
        if (!uv_is_closing((uv_handle_t *)&srv->take_idle))
                uv_close((uv_handle_t *)&srv->take_idle, NULL);
        if (!uv_is_closing((uv_handle_t *)&srv->lead_timer)) {
                srv->lead_timer_on = false;
                uv_close((uv_handle_t *)&srv->lead_timer, NULL);
        }
        if (!uv_is_closing((uv_handle_t *)&srv->hup_timer)) {
                srv->hup_timer_on = false;
                uv_close((uv_handle_t *)&srv->hup_timer, NULL);
        }
        while (srv->clients)
                client_close(srv->clients);
}
