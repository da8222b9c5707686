/* netlibs.c: libcurl, libxml2 and libmicrohttpd loaded when first used, not
 * at start-up.
 *
 * Only the cloud providers (EC2's HTTPS API and its XML answers) and the
 * Kubernetes backend use the first two, and only `spillway serve` the
 * third (with GnuTLS and its eight libraries); every `spillway submit` or
 * `queue` is a
 * process of its own, and linking them made the dynamic loader map and
 * relocate some twenty more libraries (libcurl's TLS, HTTP/2, LDAP and
 * Kerberos stacks, libxml2's ICU) before main().  This file defines the
 * few functions spillway calls, with their own names and prototypes from
 * the libraries' headers, and forwards each to the library opened with
 * dlopen on first use.  Nothing else changes: the callers include
 * <curl/curl.h> and <libxml/parser.h> as before.
 *
 * A library that cannot be opened makes curl_global_init fail
 * (CURLE_FAILED_INIT), curl_easy_init and xmlReadMemory return NULL, and
 * spw_netlibs_error() says why; the callers already handle those. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* curl.h's type-checking macros would shadow the definitions below. */
#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <microhttpd.h>

#include "util/netlibs.h"

/* The sonames of Debian 12's libcurl4 (OpenSSL flavour) and libxml2. */
#define CURL_SONAME "libcurl.so.4"
#define XML_SONAME "libxml2.so.2"
#define MHD_SONAME "libmicrohttpd.so.12"

typedef void (*any_fn)(void);

static struct {
    CURLcode (*global_init)(long);
    CURL *(*easy_init)(void);
    CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
    CURLcode (*easy_perform)(CURL *);
    CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
    void (*easy_cleanup)(CURL *);
    const char *(*easy_strerror)(CURLcode);
    char *(*easy_escape)(CURL *, const char *, int);
    void (*free)(void *);
    struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
    void (*slist_free_all)(struct curl_slist *);
} cu;

static struct {
    void (*init_parser)(void);
    xmlDocPtr (*read_memory)(const char *, int, const char *, const char *, int);
    xmlNodePtr (*root)(const xmlDoc *);
    void (*free_doc)(xmlDocPtr);
    xmlChar *(*content)(const xmlNode *);
    xmlFreeFunc *free;          /* the library's xmlFree variable */
} xm;

static struct {
    struct MHD_Daemon *(*start_va)(unsigned int, uint16_t, MHD_AcceptPolicyCallback, void *,
                                   MHD_AccessHandlerCallback, void *, va_list);
    void (*stop)(struct MHD_Daemon *);
    MHD_socket (*quiesce)(struct MHD_Daemon *);
    const union MHD_DaemonInfo *(*daemon_info)(struct MHD_Daemon *, enum MHD_DaemonInfoType,
                                               ...);
    const union MHD_ConnectionInfo *(*conn_info)(struct MHD_Connection *,
                                                 enum MHD_ConnectionInfoType, ...);
    int (*values)(struct MHD_Connection *, enum MHD_ValueKind, MHD_KeyValueIterator, void *);
    const char *(*lookup)(struct MHD_Connection *, enum MHD_ValueKind, const char *);
    struct MHD_Response *(*from_buffer)(size_t, void *, enum MHD_ResponseMemoryMode);
    enum MHD_Result (*add_header)(struct MHD_Response *, const char *, const char *);
    enum MHD_Result (*queue)(struct MHD_Connection *, unsigned int, struct MHD_Response *);
    void (*destroy)(struct MHD_Response *);
    enum MHD_Result (*feature)(enum MHD_FEATURE);
} mh;

static pthread_once_t curl_once = PTHREAD_ONCE_INIT, xml_once = PTHREAD_ONCE_INIT,
                      mhd_once = PTHREAD_ONCE_INIT;
static int curl_ok, xml_ok, mhd_ok; /* 1 once every symbol was found */
static char why[256];           /* what failed, for spw_netlibs_error */

/* Opens soname and fills n function pointers from names; 1, or 0 with why. */
static int open_lib(const char *soname, const char *const *names, void **slots, size_t n)
{
    void *lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(why, sizeof(why), "cannot load %s (%s): install Debian's %s", soname,
                 dlerror(),
                 soname[3] == 'c' ? "libcurl4" : soname[3] == 'x' ? "libxml2" : "libmicrohttpd12");
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        if (!(slots[i] = dlsym(lib, names[i]))) {
            snprintf(why, sizeof(why), "%s has no %s: a different library by that name?", soname,
                     names[i]);
            return 0;  /* lib stays open: harmless, and the answer stays the same */
        }
    }
    return 1;
}

static void load_curl(void)
{
    static const char *const names[] = {
        "curl_global_init", "curl_easy_init", "curl_easy_setopt", "curl_easy_perform",
        "curl_easy_getinfo", "curl_easy_cleanup", "curl_easy_strerror", "curl_easy_escape",
        "curl_free", "curl_slist_append", "curl_slist_free_all"};
    void *slots[sizeof(names) / sizeof(names[0])];
    if (!open_lib(CURL_SONAME, names, slots, sizeof(names) / sizeof(names[0])))
        return;
    /* Object pointers to function pointers: POSIX dlsym's contract. */
    *(void **)&cu.global_init = slots[0];
    *(void **)&cu.easy_init = slots[1];
    *(void **)&cu.easy_setopt = slots[2];
    *(void **)&cu.easy_perform = slots[3];
    *(void **)&cu.easy_getinfo = slots[4];
    *(void **)&cu.easy_cleanup = slots[5];
    *(void **)&cu.easy_strerror = slots[6];
    *(void **)&cu.easy_escape = slots[7];
    *(void **)&cu.free = slots[8];
    *(void **)&cu.slist_append = slots[9];
    *(void **)&cu.slist_free_all = slots[10];
    curl_ok = 1;
}

static void load_xml(void)
{
    static const char *const names[] = {"xmlInitParser", "xmlReadMemory", "xmlDocGetRootElement",
                                        "xmlFreeDoc", "xmlNodeGetContent", "xmlFree"};
    void *slots[sizeof(names) / sizeof(names[0])];
    if (!open_lib(XML_SONAME, names, slots, sizeof(names) / sizeof(names[0])))
        return;
    *(void **)&xm.init_parser = slots[0];
    *(void **)&xm.read_memory = slots[1];
    *(void **)&xm.root = slots[2];
    *(void **)&xm.free_doc = slots[3];
    *(void **)&xm.content = slots[4];
    xm.free = slots[5];
    xml_ok = 1;
}

static void load_mhd(void)
{
    static const char *const names[] = {
        "MHD_start_daemon_va", "MHD_stop_daemon", "MHD_quiesce_daemon", "MHD_get_daemon_info",
        "MHD_get_connection_info", "MHD_get_connection_values", "MHD_lookup_connection_value",
        "MHD_create_response_from_buffer", "MHD_add_response_header", "MHD_queue_response",
        "MHD_destroy_response", "MHD_is_feature_supported"};
    void *slots[sizeof(names) / sizeof(names[0])];
    if (!open_lib(MHD_SONAME, names, slots, sizeof(names) / sizeof(names[0])))
        return;
    *(void **)&mh.start_va = slots[0];
    *(void **)&mh.stop = slots[1];
    *(void **)&mh.quiesce = slots[2];
    *(void **)&mh.daemon_info = slots[3];
    *(void **)&mh.conn_info = slots[4];
    *(void **)&mh.values = slots[5];
    *(void **)&mh.lookup = slots[6];
    *(void **)&mh.from_buffer = slots[7];
    *(void **)&mh.add_header = slots[8];
    *(void **)&mh.queue = slots[9];
    *(void **)&mh.destroy = slots[10];
    *(void **)&mh.feature = slots[11];
    mhd_ok = 1;
}

static int have_mhd(void)
{
    pthread_once(&mhd_once, load_mhd);
    return mhd_ok;
}

static int have_curl(void)
{
    pthread_once(&curl_once, load_curl);
    return curl_ok;
}

static int have_xml(void)
{
    pthread_once(&xml_once, load_xml);
    return xml_ok;
}

const char *spw_netlibs_error(void)
{
    return why[0] ? why : NULL;
}

/* ---- libcurl ------------------------------------------------------------ */

CURLcode curl_global_init(long flags)
{
    return have_curl() ? cu.global_init(flags) : CURLE_FAILED_INIT;
}

CURL *curl_easy_init(void)
{
    return have_curl() ? cu.easy_init() : NULL;
}

/* The one argument after the option is a long, an object pointer, a
 * function pointer, a curl_off_t or a blob pointer, by the option's range
 * (curl.h's CURLOPTTYPE_*): it is read as that type and passed on. */
CURLcode curl_easy_setopt(CURL *h, CURLoption opt, ...)
{
    if (!have_curl())
        return CURLE_FAILED_INIT;
    va_list ap;
    va_start(ap, opt);
    CURLcode rc;
    if (opt < CURLOPTTYPE_OBJECTPOINT)
        rc = cu.easy_setopt(h, opt, va_arg(ap, long));
    else if (opt < CURLOPTTYPE_FUNCTIONPOINT)
        rc = cu.easy_setopt(h, opt, va_arg(ap, void *));
    else if (opt < CURLOPTTYPE_OFF_T)
        rc = cu.easy_setopt(h, opt, va_arg(ap, any_fn));
    else if (opt < CURLOPTTYPE_BLOB)
        rc = cu.easy_setopt(h, opt, va_arg(ap, curl_off_t));
    else
        rc = cu.easy_setopt(h, opt, va_arg(ap, void *));
    va_end(ap);
    return rc;
}

CURLcode curl_easy_perform(CURL *h)
{
    return have_curl() ? cu.easy_perform(h) : CURLE_FAILED_INIT;
}

/* Every CURLINFO_* takes one pointer. */
CURLcode curl_easy_getinfo(CURL *h, CURLINFO info, ...)
{
    if (!have_curl())
        return CURLE_FAILED_INIT;
    va_list ap;
    va_start(ap, info);
    CURLcode rc = cu.easy_getinfo(h, info, va_arg(ap, void *));
    va_end(ap);
    return rc;
}

void curl_easy_cleanup(CURL *h)
{
    if (have_curl())
        cu.easy_cleanup(h);
}

const char *curl_easy_strerror(CURLcode code)
{
    return have_curl() ? cu.easy_strerror(code) : why;
}

char *curl_easy_escape(CURL *h, const char *s, int len)
{
    return have_curl() ? cu.easy_escape(h, s, len) : NULL;
}

void curl_free(void *p)
{
    if (have_curl())
        cu.free(p);
}

struct curl_slist *curl_slist_append(struct curl_slist *l, const char *s)
{
    return have_curl() ? cu.slist_append(l, s) : NULL;
}

void curl_slist_free_all(struct curl_slist *l)
{
    if (have_curl())
        cu.slist_free_all(l);
}

/* ---- libxml2 ------------------------------------------------------------ */

void xmlInitParser(void)
{
    if (have_xml())
        xm.init_parser();
}

xmlDocPtr xmlReadMemory(const char *buf, int size, const char *url, const char *encoding,
                        int options)
{
    return have_xml() ? xm.read_memory(buf, size, url, encoding, options) : NULL;
}

xmlNodePtr xmlDocGetRootElement(const xmlDoc *doc)
{
    return have_xml() ? xm.root(doc) : NULL;
}

void xmlFreeDoc(xmlDocPtr doc)
{
    if (have_xml())
        xm.free_doc(doc);
}

xmlChar *xmlNodeGetContent(const xmlNode *node)
{
    return have_xml() ? xm.content(node) : NULL;
}

/* What xmlNodeGetContent returns is freed by the library's own xmlFree. */
static void free_xml(void *p)
{
    if (have_xml())
        (*xm.free)(p);
}

xmlFreeFunc xmlFree = free_xml;

/* ---- libmicrohttpd ------------------------------------------------------ */

/* Connections and responses exist only once a daemon started, so only the
 * start and the feature test can meet a library that did not load. */

struct MHD_Daemon *MHD_start_daemon(unsigned int flags, uint16_t port,
                                    MHD_AcceptPolicyCallback apc, void *apc_cls,
                                    MHD_AccessHandlerCallback dh, void *dh_cls, ...)
{
    if (!have_mhd())
        return NULL;
    va_list ap;
    va_start(ap, dh_cls);
    struct MHD_Daemon *d = mh.start_va(flags, port, apc, apc_cls, dh, dh_cls, ap);
    va_end(ap);
    return d;
}

void MHD_stop_daemon(struct MHD_Daemon *d)
{
    if (have_mhd())
        mh.stop(d);
}

MHD_socket MHD_quiesce_daemon(struct MHD_Daemon *d)
{
    return have_mhd() ? mh.quiesce(d) : MHD_INVALID_SOCKET;
}

/* The info types spillway asks (the bound port; a connection's fd, client
 * address, socket context) take no further argument. */
const union MHD_DaemonInfo *MHD_get_daemon_info(struct MHD_Daemon *d,
                                                enum MHD_DaemonInfoType type, ...)
{
    return have_mhd() ? mh.daemon_info(d, type) : NULL;
}

const union MHD_ConnectionInfo *MHD_get_connection_info(struct MHD_Connection *c,
                                                        enum MHD_ConnectionInfoType type, ...)
{
    return have_mhd() ? mh.conn_info(c, type) : NULL;
}

int MHD_get_connection_values(struct MHD_Connection *c, enum MHD_ValueKind kind,
                              MHD_KeyValueIterator it, void *it_cls)
{
    return have_mhd() ? mh.values(c, kind, it, it_cls) : -1;
}

const char *MHD_lookup_connection_value(struct MHD_Connection *c, enum MHD_ValueKind kind,
                                        const char *key)
{
    return have_mhd() ? mh.lookup(c, kind, key) : NULL;
}

struct MHD_Response *MHD_create_response_from_buffer(size_t size, void *buf,
                                                     enum MHD_ResponseMemoryMode mode)
{
    return have_mhd() ? mh.from_buffer(size, buf, mode) : NULL;
}

#if MHD_VERSION >= 0x00097701
/* Newer libmicrohttpd (http.c uses it there): looked up on its own. */
struct MHD_Response *MHD_create_response_from_buffer_copy(size_t size, const void *buf)
{
    static struct MHD_Response *(*copy)(size_t, const void *);
    void *lib = !copy && have_mhd() ? dlopen(MHD_SONAME, RTLD_NOW | RTLD_LOCAL) : NULL;
    if (lib)
        *(void **)&copy = dlsym(lib, "MHD_create_response_from_buffer_copy");
    return copy ? copy(size, buf) : NULL;
}
#endif

enum MHD_Result MHD_add_response_header(struct MHD_Response *r, const char *header,
                                        const char *content)
{
    return have_mhd() ? mh.add_header(r, header, content) : MHD_NO;
}

enum MHD_Result MHD_queue_response(struct MHD_Connection *c, unsigned int status,
                                   struct MHD_Response *r)
{
    return have_mhd() ? mh.queue(c, status, r) : MHD_NO;
}

void MHD_destroy_response(struct MHD_Response *r)
{
    if (have_mhd())
        mh.destroy(r);
}

enum MHD_Result MHD_is_feature_supported(enum MHD_FEATURE feature)
{
    return have_mhd() ? mh.feature(feature) : MHD_NO;
}
