/* SPDX-License-Identifier: MIT */
#include "proxy-ca.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "fd-util.h"
#include "macro.h"
#include "path-util.h"
#include "sha256.h"
#include "strbuf.h"
#include "time-util.h"

#define CA_DAYS 3650
#define LEAF_DAYS 30     /* a leaf is minted again at each jail start */
#define CA_RENEW_DAYS 60 /* a CA this close to its end is made anew */
#define CA_FILE_MAX (64 * 1024)
#define SYSTEM_CAS_MAX (16 * 1024 * 1024)

DEFINE_TRIVIAL_CLEANUP_FUNC(EVP_PKEY *, EVP_PKEY_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(X509 *, X509_free);
DEFINE_TRIVIAL_CLEANUP_FUNC(BIO *, BIO_free);

static int ssl_error(VsError **err, const char *what) {
        char buf[256] = "";
        unsigned long e = ERR_get_error();
        if (e)
                ERR_error_string_n(e, buf, sizeof buf);
        ERR_clear_error();
        return vs_error_set_kind(err, -EIO, "sandbox_unavailable", "the workspace's CA: %s: %s", what,
                                 *buf ? buf : "failed");
}

static int add_ext(X509 *cert, X509 *issuer, int nid, const char *value) {
        X509V3_CTX ctx;
        X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
        X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
        if (!ext)
                return -EINVAL;
        int ok = X509_add_ext(cert, ext, -1);
        X509_EXTENSION_free(ext);
        return ok ? 0 : -ENOMEM;
}

/* A certificate for key, signed by issuer_key (itself when issuer is
 * NULL), valid from an hour ago (clocks differ) for days. */
static X509 *make_cert(EVP_PKEY *key, const char *cn, X509 *issuer, EVP_PKEY *issuer_key, long days) {
        _cleanup_(X509_freep) X509 *x = X509_new();
        BIGNUM *bn = BN_new();
        bool ok = x && bn && X509_set_version(x, 2) && BN_rand(bn, 120, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) &&
                  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) && X509_gmtime_adj(X509_getm_notBefore(x), -3600) &&
                  X509_gmtime_adj(X509_getm_notAfter(x), days * 86400L) && X509_set_pubkey(x, key);
        BN_free(bn);
        if (!ok)
                return NULL;
        X509_NAME *n = X509_get_subject_name(x);
        if (!X509_NAME_add_entry_by_txt(n, "O", MBSTRING_ASC, (const unsigned char *)"vectora-sandbox", -1, -1, 0) ||
            !X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1, 0) ||
            !X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : n))
                return NULL;
        return TAKE_PTR(x);
}

static int sign(X509 *x, EVP_PKEY *key) {
        return X509_sign(x, key, EVP_sha256()) > 0 ? 0 : -EIO;
}

static char *pem_of(int (*write)(BIO *, const void *), const void *obj) {
        _cleanup_(BIO_freep) BIO *b = BIO_new(BIO_s_mem());
        if (!b || !write(b, obj))
                return NULL;
        char *data;
        long n = BIO_get_mem_data(b, &data);
        char *s = n >= 0 ? strndup(data, (size_t)n) : NULL;
        if (n > 0)
                OPENSSL_cleanse(data, (size_t)n);
        return s;
}

static int write_cert(BIO *b, const void *x) {
        return PEM_write_bio_X509(b, (X509 *)x);
}

static int write_key(BIO *b, const void *k) {
        return PEM_write_bio_PrivateKey(b, (EVP_PKEY *)k, NULL, NULL, 0, NULL, NULL);
}

/* path written whole or not at all, with mode from its first byte. */
static int write_atomic(const char *path, const char *data, size_t len, mode_t mode) {
        _cleanup_free_ char *tmp = NULL;
        if (asprintf(&tmp, "%s.tmp.XXXXXX", path) < 0)
                return -ENOMEM;
        _cleanup_close_ int fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0)
                return -errno;
        int r = fchmod(fd, mode) < 0 ? -errno : write_all(fd, data, len);
        if (r >= 0 && (fsync(fd) < 0 || rename(tmp, path) < 0))
                r = -errno;
        if (r < 0)
                (void)unlink(tmp);
        return r;
}

/* follow: a system path of the host's, where a link is the norm
 * (Debian's /usr/lib/ssl/cert.pem); never one a jail shaped. */
static int read_file(const char *path, bool follow, size_t max, char **ret, size_t *ret_len) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW));
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EBADF;
        return read_fd_all(fd, max, ret, ret_len);
}

typedef struct Ca {
        EVP_PKEY *key;
        X509 *cert;
        char *cert_pem;
} Ca;

static void ca_done(Ca *ca) {
        EVP_PKEY_free(ca->key);
        X509_free(ca->cert);
        free(ca->cert_pem);
}

/* The CA kept from an earlier start: the key only when it is the
 * daemon's alone (a regular file of its uid, mode 0600), and the
 * certificate only while it is far from its end and matches the key. */
static bool ca_load(Ca *ca, const char *key_path, const char *cert_path) {
        _cleanup_free_ char *kt = NULL;
        size_t kl = 0, cl = 0;
        _cleanup_close_ int fd = open(key_path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077) ||
            read_fd_all(fd, CA_FILE_MAX, &kt, &kl) < 0 || read_file(cert_path, false, CA_FILE_MAX, &ca->cert_pem, &cl) < 0)
                return false;
        _cleanup_(BIO_freep) BIO *kb = BIO_new_mem_buf(kt, (int)kl);
        _cleanup_(BIO_freep) BIO *cb = BIO_new_mem_buf(ca->cert_pem, (int)cl);
        ca->key = kb ? PEM_read_bio_PrivateKey(kb, NULL, NULL, NULL) : NULL;
        ca->cert = cb ? PEM_read_bio_X509(cb, NULL, NULL, NULL) : NULL;
        OPENSSL_cleanse(kt, kl);
        time_t soon = now_wall().tv_sec + CA_RENEW_DAYS * 86400L;
        bool ok = ca->key && ca->cert && X509_check_private_key(ca->cert, ca->key) == 1 &&
                  X509_cmp_time(X509_get0_notAfter(ca->cert), &soon) > 0;
        ERR_clear_error();
        return ok;
}

static int ca_make(Ca *ca, const char *hex, const char *key_path, const char *cert_path, VsError **err) {
        char cn[96];
        snprintf(cn, sizeof cn, "vectora-sandbox workspace CA %.12s", hex);
        if (!(ca->key = EVP_EC_gen("P-256")))
                return ssl_error(err, "making its key");
        if (!(ca->cert = make_cert(ca->key, cn, NULL, ca->key, CA_DAYS)) ||
            add_ext(ca->cert, ca->cert, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") < 0 ||
            add_ext(ca->cert, ca->cert, NID_key_usage, "critical,keyCertSign,cRLSign") < 0 ||
            add_ext(ca->cert, ca->cert, NID_subject_key_identifier, "hash") < 0 || sign(ca->cert, ca->key) < 0)
                return ssl_error(err, "making its certificate");
        _cleanup_free_ char *key_pem = pem_of(write_key, ca->key);
        if (!key_pem || !(ca->cert_pem = pem_of(write_cert, ca->cert)))
                return -ENOMEM;
        /* The key first: a certificate on disk always has its key. */
        int r = write_atomic(key_path, key_pem, strlen(key_pem), 0600);
        explicit_bzero(key_pem, strlen(key_pem));
        if (r >= 0)
                r = write_atomic(cert_path, ca->cert_pem, strlen(ca->cert_pem), 0644);
        if (r < 0)
                return vs_error_set_kind(err, r, "sandbox_unavailable", "cannot write the workspace's CA %s: %s", key_path,
                                         strerror(-r));
        return 0;
}

/* The leaf for one secret: its hosts as the names (and addresses) it is
 * valid for, and nothing else, so that the proxy holding it can speak as
 * those hosts only. */
static int leaf_make(const Ca *ca, ProxyCtlMsg *m, VsError **err) {
        StrBuf san = {};
        for (size_t i = 0; i < m->n_rules; i++) {
                const VsNetRule *r = &m->rules[i];
                if (strbuf_appendf(&san, "%s%s:%s%s", i ? "," : "", r->kind == VS_NET_IP ? "IP" : "DNS",
                                   r->kind == VS_NET_WILDCARD ? "*." : "", r->host) < 0) {
                        strbuf_done(&san);
                        return -ENOMEM;
                }
        }
        _cleanup_(EVP_PKEY_freep) EVP_PKEY *key = EVP_EC_gen("P-256");
        _cleanup_(X509_freep) X509 *x = key ? make_cert(key, m->rules[0].host, ca->cert, ca->key, LEAF_DAYS) : NULL;
        int r = x && add_ext(x, ca->cert, NID_basic_constraints, "critical,CA:FALSE") >= 0 &&
                                add_ext(x, ca->cert, NID_key_usage, "critical,digitalSignature") >= 0 &&
                                add_ext(x, ca->cert, NID_ext_key_usage, "serverAuth") >= 0 &&
                                add_ext(x, ca->cert, NID_subject_alt_name, san.data) >= 0 &&
                                add_ext(x, ca->cert, NID_subject_key_identifier, "hash") >= 0 &&
                                add_ext(x, ca->cert, NID_authority_key_identifier, "keyid:always") >= 0 &&
                                sign(x, ca->key) >= 0
                        ? 0
                        : -EIO;
        strbuf_done(&san);
        if (r < 0)
                return ssl_error(err, "minting a leaf certificate");
        free(m->cert);
        free(m->key);
        m->cert = pem_of(write_cert, x);
        m->key = pem_of(write_key, key);
        return m->cert && m->key ? 0 : -ENOMEM;
}

/* The system CAs the jail trusted before, and the workspace's CA. */
static int bundle_write(const Ca *ca, const char *bundle_path, VsError **err) {
        const char *sys = getenv(X509_get_default_cert_file_env());
        if (!sys || !*sys)
                sys = X509_get_default_cert_file();
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        int r = read_file(sys, true, SYSTEM_CAS_MAX, &text, &len);
        if (r < 0 && r != -ENOENT)
                return vs_error_set_kind(err, r, "sandbox_unavailable", "cannot read the system CAs %s: %s", sys,
                                         strerror(-r));
        StrBuf b = {};
        r = strbuf_append(&b, text ? text : "", len);
        if (r >= 0 && len && text[len - 1] != '\n')
                r = strbuf_append(&b, "\n", 1);
        if (r >= 0)
                r = strbuf_appendf(&b, "# vectora-sandbox: this workspace's CA (HTTPS to its secrets' hosts)\n%s",
                                   ca->cert_pem);
        if (r >= 0)
                r = write_atomic(bundle_path, b.data, b.len, 0644);
        strbuf_done(&b);
        if (r < 0)
                return vs_error_set_kind(err, r, "sandbox_unavailable", "cannot write the jail's CA bundle %s: %s",
                                         bundle_path, strerror(-r));
        return 0;
}

int proxy_ca_prepare(const char *state_dir, const char *ws_path, const char *bundle_path, ProxySecrets *ps,
                     VsError **err) {
        _cleanup_free_ char *dir = path_join(state_dir, "ca"), *key_path = NULL, *cert_path = NULL;
        char hex[SHA256_HEX_LEN + 1];
        sha256_hex(ws_path, strlen(ws_path), hex);
        if (!dir || asprintf(&key_path, "%s/%.32s.key", dir, hex) < 0 ||
            asprintf(&cert_path, "%s/%.32s.crt", dir, hex) < 0)
                return -ENOMEM;
        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
                return vs_error_set_kind(err, -errno, "sandbox_unavailable", "cannot make %s: %m", dir);
        _cleanup_(ca_done) Ca ca = {};
        int r = 0;
        if (!ca_load(&ca, key_path, cert_path)) {
                ca_done(&ca);
                ca = (Ca){};
                r = ca_make(&ca, hex, key_path, cert_path, err);
        }
        if (r < 0 || (r = bundle_write(&ca, bundle_path, err)) < 0)
                return r;
        for (size_t i = 0; i < ps->n; i++)
                if ((r = leaf_make(&ca, &ps->msgs[i], err)) < 0)
                        return r;
        return 0;
}
