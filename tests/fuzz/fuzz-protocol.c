/* SPDX-License-Identifier: MIT */
/* Every protocol decoder on every message the reader accepts from arbitrary
 * bytes; what decodes is encoded again where an encoder exists. */
#include <stdint.h>

#include "fuzz-messages.h"
#include "jsonl.h"
#include "protocol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define TRY(call)                                                                          \
        do {                                                                               \
                VsError *_e = NULL;                                                        \
                (void) (call);                                                             \
                vs_error_free(_e);                                                         \
        } while (0)

static void decode_all(json_t *o, size_t raw_len) {
        VsError *e = NULL;
        StrBuf b = STRBUF_INIT;

        ProtocolRequestHead head;
        uint64_t id;
        (void) protocol_peek_id(o, &id);
        if (protocol_decode_request_head(o, &head, &e) == 0 &&
            !protocol_op_to_string(head.op))
                __builtin_trap();
        vs_error_free(e), e = NULL;

        ProtocolInit init;
        if (protocol_decode_init(o, &init, &e) == 0) {
                (void) protocol_encode_init(&b, &init);
                protocol_init_done(&init);
        }
        vs_error_free(e), e = NULL;

        ProtocolExecRequest ex;
        if (protocol_decode_exec_request(o, &ex, &e) == 0) {
                if (!ex.argv || !ex.argv[0])
                        __builtin_trap();
                (void) protocol_encode_exec_request(&b, ex.head.id, &ex, NULL, 0);
                protocol_exec_request_done(&ex);
        }
        vs_error_free(e), e = NULL;

        ProtocolReadFileRequest rf;
        if (protocol_decode_read_file_request(o, &rf, &e) == 0)
                (void) protocol_encode_read_file_request(&b, rf.head.id, &rf);
        vs_error_free(e), e = NULL;
        ProtocolWriteFileRequest wf;
        if (protocol_decode_write_file_request(o, &wf, &e) == 0)
                (void) protocol_encode_write_file_request(&b, wf.head.id, &wf, "", 0);
        vs_error_free(e), e = NULL;
        ProtocolPathRequest pr;
        if (protocol_decode_stat_request(o, &pr, &e) == 0)
                (void) protocol_encode_stat_request(&b, pr.head.id, pr.path);
        vs_error_free(e), e = NULL;
        ProtocolListDirRequest ld_req;
        if (protocol_decode_list_dir_request(o, &ld_req, &e) == 0)
                (void) protocol_encode_list_dir_request(&b, ld_req.head.id, &ld_req);
        vs_error_free(e), e = NULL;
        ProtocolCancelRequest cr;
        if (protocol_decode_cancel_request(o, &cr, &e) == 0)
                (void) protocol_encode_cancel_request(&b, cr.head.id, cr.target);
        vs_error_free(e), e = NULL;
        ProtocolRequestHead sh;
        TRY(protocol_decode_shutdown_request(o, &sh, &_e));

        ProtocolHello h;
        if (protocol_decode_hello(o, &h, &e) == 0) {
                (void) protocol_encode_hello(&b, &h);
                protocol_hello_done(&h);
        }
        vs_error_free(e), e = NULL;
        ProtocolReady rd;
        if (protocol_decode_ready(o, &rd, &e) == 0) {
                (void) protocol_encode_ready(&b, &rd);
                protocol_ready_done(&rd);
        }
        vs_error_free(e), e = NULL;
        const char *msg;
        TRY(protocol_decode_init_failed(o, &msg, &_e));

        ProtocolReplyHead rh;
        TRY(protocol_decode_reply_head(o, &rh, &_e));
        ProtocolExecReply er;
        TRY(protocol_decode_exec_reply(o, raw_len, &er, &_e));
        ProtocolReadFileReply rr;
        TRY(protocol_decode_read_file_reply(o, &rr, &_e));
        ProtocolWriteFileReply wr;
        TRY(protocol_decode_write_file_reply(o, &wr, &_e));
        ProtocolStatReply st;
        if (protocol_decode_stat_reply(o, &st, &e) == 0)
                (void) protocol_encode_stat_reply(&b, 0, &st);
        vs_error_free(e), e = NULL;
        ProtocolListDirReply ld;
        if (protocol_decode_list_dir_reply(o, &ld, &e) == 0) {
                (void) protocol_encode_list_dir_reply(&b, 0, &ld);
                protocol_list_dir_reply_done(&ld);
        }
        vs_error_free(e), e = NULL;
        /* glob and grep: a decoded request or reply encodes again. */
        ProtocolFindRequest fq;
        if (protocol_decode_find_request(o, &fq, &e) == 0 && protocol_encode_find_request(&b, fq.head.id, &fq) == -EINVAL)
                __builtin_trap();
        vs_error_free(e), e = NULL;
        ProtocolFindReply fr;
        for (ProtocolOp op = PROTOCOL_OP_GLOB; op <= PROTOCOL_OP_GREP; op++) {
                if (protocol_decode_find_reply(o, op, &fr, &e) == 0 && protocol_encode_find_reply(&b, 0, &fr) == -EINVAL)
                        __builtin_trap();
                vs_error_free(e), e = NULL;
        }
        bool found;
        TRY(protocol_decode_cancel_reply(o, &found, &_e));

        ProtocolSessionOpenRequest so;
        if (protocol_decode_session_open_request(o, &so, &e) == 0) {
                if (!so.connect && (!so.argv || !so.argv[0]))
                        __builtin_trap();
                if (protocol_encode_session_open_request(&b, so.head.id, &so) < 0)
                        __builtin_trap(); /* what decodes must encode */
                protocol_session_open_request_done(&so);
        }
        vs_error_free(e), e = NULL;
        ProtocolSessionRequest sr;
        if (protocol_decode_session_request(o, &sr, &e) == 0 &&
            protocol_encode_session_request(&b, sr.head.id, sr.head.op, &sr, "", 0) < 0)
                __builtin_trap();
        vs_error_free(e), e = NULL;
        int64_t spid;
        TRY(protocol_decode_session_open_reply(o, &spid, &_e));
        ProtocolSessionEvent ev;
        if (protocol_decode_session_event(o, &ev, &e) == 0 && protocol_encode_session_event(&b, &ev, "", 0) < 0)
                __builtin_trap();
        vs_error_free(e), e = NULL;

        strbuf_done(&b);
}

static void decode_msg(JsonlMsg *m) {
        decode_all(m->obj, m->raw_len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        fuzz_each_message(data, size, 0, decode_msg);
        return 0;
}
