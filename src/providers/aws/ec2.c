/* ec2.c: the EC2 Query API's requests and answers (see ec2.h). */
#include "providers/aws/ec2.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <openssl/evp.h>

/* ---- Requests ---------------------------------------------------------- */

void spw_ec2_form_init(spw_strbuf_t *b, const char *action)
{
    spw_strbuf_add(b, "Action=");
    spw_aws_uri_encode(b, action, strlen(action), 0);
    spw_strbuf_add(b, "&Version=" SPW_EC2_VERSION);
}

void spw_ec2_form_add(spw_strbuf_t *b, const char *key, const char *value)
{
    spw_strbuf_add(b, "&");
    spw_aws_uri_encode(b, key, strlen(key), 0);
    spw_strbuf_add(b, "=");
    spw_aws_uri_encode(b, value, strlen(value), 0);
}

/* Appends "&KEY=VALUE" with a formatted key. */
static void __attribute__((format(printf, 3, 4)))
form_addf(spw_strbuf_t *b, const char *value, const char *keyfmt, ...)
{
    char key[128];
    va_list ap;
    va_start(ap, keyfmt);
    vsnprintf(key, sizeof(key), keyfmt, ap);
    va_end(ap);
    spw_ec2_form_add(b, key, value);
}

static void form_tag(spw_strbuf_t *b, int spec, int n, const char *key, const char *value)
{
    form_addf(b, key, "TagSpecification.%d.Tag.%d.Key", spec, n);
    form_addf(b, value, "TagSpecification.%d.Tag.%d.Value", spec, n);
}

void spw_ec2_run_form(const spw_ec2_run_t *r, spw_strbuf_t *b)
{
    char n[16];
    spw_ec2_form_init(b, "RunInstances");
    spw_ec2_form_add(b, "ImageId", r->image_id ? r->image_id : "");
    spw_ec2_form_add(b, "InstanceType", r->instance_type);
    snprintf(n, sizeof(n), "%u", r->count);
    spw_ec2_form_add(b, "MinCount", n);
    spw_ec2_form_add(b, "MaxCount", n);
    if (r->client_token && *r->client_token)
        spw_ec2_form_add(b, "ClientToken", r->client_token);
    if (r->zone && *r->zone)
        spw_ec2_form_add(b, "Placement.AvailabilityZone", r->zone);
    if (r->subnet_id && *r->subnet_id)
        spw_ec2_form_add(b, "SubnetId", r->subnet_id);
    for (int i = 0; r->security_groups && r->security_groups[i]; i++)
        form_addf(b, r->security_groups[i], "SecurityGroupId.%d", i + 1);
    if (r->key_name && *r->key_name)
        spw_ec2_form_add(b, "KeyName", r->key_name);
    if (r->ssh_public_key && *r->ssh_public_key) {
        spw_strbuf_t ud = {0};
        spw_strbuf_printf(&ud, "#cloud-config\nssh_authorized_keys:\n  - %s\n",
                          r->ssh_public_key);
        char *b64 = spw_xmalloc(4 * ((ud.len + 2) / 3) + 1);
        EVP_EncodeBlock((unsigned char *)b64, (const unsigned char *)ud.s, (int)ud.len);
        spw_ec2_form_add(b, "UserData", b64);
        free(b64);
        free(ud.s);
    }
    if (r->spot) {
        spw_ec2_form_add(b, "InstanceMarketOptions.MarketType", "spot");
        spw_ec2_form_add(b, "InstanceMarketOptions.SpotOptions.SpotInstanceType", "one-time");
        spw_ec2_form_add(b, "InstanceMarketOptions.SpotOptions.InstanceInterruptionBehavior",
                         "terminate");
        if (r->max_price_usd_per_h > 0) {
            char price[32];
            snprintf(price, sizeof(price), "%.6f", r->max_price_usd_per_h);
            spw_ec2_form_add(b, "InstanceMarketOptions.SpotOptions.MaxPrice", price);
        }
    }
    /* The instance and its volumes carry the same tags, so that a volume
     * left behind is found by the same filter. */
    static const char *const kinds[] = {"instance", "volume"};
    for (int s = 1; s <= 2; s++) {
        form_addf(b, kinds[s - 1], "TagSpecification.%d.ResourceType", s);
        form_tag(b, s, 1, SPW_EC2_TAG_DAEMON, r->daemon_id ? r->daemon_id : "");
        form_tag(b, s, 2, SPW_EC2_TAG_JOB, r->job_id ? r->job_id : "");
        form_tag(b, s, 3, SPW_EC2_TAG_TOKEN, r->client_token ? r->client_token : "");
    }
    if (r->dry_run)
        spw_ec2_form_add(b, "DryRun", "true");
}

void spw_ec2_describe_form(const char *daemon_id, const char *const *ids, size_t n,
                           const char *next_token, int max_results, spw_strbuf_t *b)
{
    spw_ec2_form_init(b, "DescribeInstances");
    spw_ec2_form_add(b, "Filter.1.Name", "tag:" SPW_EC2_TAG_DAEMON);
    spw_ec2_form_add(b, "Filter.1.Value.1", daemon_id ? daemon_id : "");
    for (size_t i = 0; i < n; i++)
        form_addf(b, ids[i], "InstanceId.%zu", i + 1);
    /* EC2 refuses MaxResults together with InstanceId. */
    if (max_results > 0 && n == 0) {
        char m[16];
        snprintf(m, sizeof(m), "%d", max_results);
        spw_ec2_form_add(b, "MaxResults", m);
    }
    if (next_token && *next_token)
        spw_ec2_form_add(b, "NextToken", next_token);
}

void spw_ec2_terminate_form(const char *const *ids, size_t n, int dry_run, spw_strbuf_t *b)
{
    spw_ec2_form_init(b, "TerminateInstances");
    for (size_t i = 0; i < n; i++)
        form_addf(b, ids[i], "InstanceId.%zu", i + 1);
    if (dry_run)
        spw_ec2_form_add(b, "DryRun", "true");
}

void spw_ec2_spot_price_form(const char *instance_type, const char *zone, time_t start_s,
                             spw_strbuf_t *b)
{
    char t[32];
    struct tm tm;
    gmtime_r(&start_s, &tm);
    strftime(t, sizeof(t), "%Y-%m-%dT%H:%M:%SZ", &tm);
    spw_ec2_form_init(b, "DescribeSpotPriceHistory");
    spw_ec2_form_add(b, "InstanceType.1", instance_type);
    spw_ec2_form_add(b, "ProductDescription.1", "Linux/UNIX");
    spw_ec2_form_add(b, "StartTime", t);
    if (zone && *zone)
        spw_ec2_form_add(b, "AvailabilityZone", zone);
}

/* ---- Answers ----------------------------------------------------------- */

static int named(const xmlNode *n, const char *name)
{
    return n->type == XML_ELEMENT_NODE && strcmp((const char *)n->name, name) == 0;
}

static xmlNode *child(const xmlNode *n, const char *name)
{
    for (xmlNode *c = n ? n->children : NULL; c; c = c->next)
        if (named(c, name))
            return c;
    return NULL;
}

/* Copies the text of n's child name (or of n itself when name is NULL) to
 * out; "" when absent. */
static void text_of(const xmlNode *n, const char *name, char *out, size_t len)
{
    const xmlNode *c = name ? child(n, name) : n;
    out[0] = '\0';
    if (!c)
        return;
    xmlChar *t = xmlNodeGetContent(c);
    if (t) {
        /* Trimmed: pretty-printed answers carry blanks around values. */
        const char *s = (const char *)t;
        size_t a = strspn(s, " \t\r\n"), e = strlen(s);
        while (e > a && strchr(" \t\r\n", s[e - 1]))
            e--;
        snprintf(out, len, "%.*s", (int)(e - a), s + a);
        xmlFree(t);
    }
}

double spw_ec2_time_parse(const char *s)
{
    struct tm tm = {0};
    int y, mo, d, h, mi, sec;
    if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d", &y, &mo, &d, &h, &mi, &sec) != 6)
        return -1;
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = sec;
    return (double)timegm(&tm);
}

static void parse_instance(const xmlNode *item, spw_ec2_instance_t *in)
{
    char code[16];
    memset(in, 0, sizeof(*in));
    text_of(item, "instanceId", in->instance_id, sizeof(in->instance_id));
    /* Terminate answers carry currentState (shutdownState before the
     * 2016-11-15 model) and previousState instead. */
    const xmlNode *st = child(item, "instanceState");
    if (!st)
        st = child(item, "currentState");
    if (!st)
        st = child(item, "shutdownState");
    text_of(st, "name", in->state, sizeof(in->state));
    text_of(st, "code", code, sizeof(code));
    in->state_code = code[0] ? atoi(code) : -1;
    const xmlNode *why = child(item, "stateReason");
    text_of(why, "code", in->state_reason, sizeof(in->state_reason));
    text_of(why, "message", in->state_message, sizeof(in->state_message));
    text_of(item, "privateIpAddress", in->private_ip, sizeof(in->private_ip));
    text_of(item, "ipAddress", in->public_ip, sizeof(in->public_ip));
    text_of(item, "instanceType", in->instance_type, sizeof(in->instance_type));
    text_of(child(item, "placement"), "availabilityZone", in->zone, sizeof(in->zone));
    text_of(item, "clientToken", in->client_token, sizeof(in->client_token));
    char life[16];
    text_of(item, "instanceLifecycle", life, sizeof(life));
    in->spot = strcmp(life, "spot") == 0;
    char when[40];
    text_of(item, "launchTime", when, sizeof(when));
    in->launch_s = spw_ec2_time_parse(when);
    for (const xmlNode *t = child(child(item, "tagSet"), "item");
         t && in->ntags < SPW_EC2_MAX_TAGS; t = t->next) {
        if (!named(t, "item"))
            continue;
        text_of(t, "key", in->tags[in->ntags].key, sizeof(in->tags[0].key));
        text_of(t, "value", in->tags[in->ntags].value, sizeof(in->tags[0].value));
        in->ntags++;
    }
}

static void add_instances(const xmlNode *set, spw_ec2_result_t *r)
{
    for (const xmlNode *it = set ? set->children : NULL; it; it = it->next) {
        if (!named(it, "item"))
            continue;
        r->inst = spw_xrealloc(r->inst, (r->ninst + 1) * sizeof(*r->inst));
        parse_instance(it, &r->inst[r->ninst++]);
    }
}

static void add_prices(const xmlNode *set, spw_ec2_result_t *r)
{
    for (const xmlNode *it = set ? set->children : NULL; it; it = it->next) {
        if (!named(it, "item"))
            continue;
        r->prices = spw_xrealloc(r->prices, (r->nprices + 1) * sizeof(*r->prices));
        spw_ec2_spot_price_t *p = &r->prices[r->nprices++];
        char v[64];
        memset(p, 0, sizeof(*p));
        text_of(it, "instanceType", p->instance_type, sizeof(p->instance_type));
        text_of(it, "availabilityZone", p->zone, sizeof(p->zone));
        text_of(it, "productDescription", p->product, sizeof(p->product));
        text_of(it, "spotPrice", v, sizeof(v));
        p->price_usd_per_h = strtod(v, NULL);
        text_of(it, "timestamp", v, sizeof(v));
        p->time_s = spw_ec2_time_parse(v);
    }
}

void spw_ec2_result_clear(spw_ec2_result_t *r)
{
    if (r) {
        free(r->inst);
        free(r->prices);
        *r = (spw_ec2_result_t){0};
    }
}

int spw_ec2_parse(const char *xml, size_t len, spw_ec2_result_t *out, spw_error_t *err)
{
    spw_ec2_result_clear(out);
    xmlDoc *doc = xmlReadMemory(xml, (int)len, "ec2.xml", NULL,
                                XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
    xmlNode *root = doc ? xmlDocGetRootElement(doc) : NULL;
    if (!root) {
        xmlFreeDoc(doc);
        return spw_errorf(err, "the EC2 answer is not XML (%zu bytes: '%.60s')", len,
                          xml ? xml : "");
    }
    /* Errors: EC2's <Response><Errors><Error>, and the <ErrorResponse><Error>
     * of the Query services (STS). */
    xmlNode *e = child(child(root, "Errors"), "Error");
    if (!e && named(root, "ErrorResponse"))
        e = child(root, "Error");
    if (e) {
        text_of(e, "Code", out->error_code, sizeof(out->error_code));
        text_of(e, "Message", out->error_message, sizeof(out->error_message));
        if (!out->error_code[0])
            snprintf(out->error_code, sizeof(out->error_code), "Unknown");
    }
    text_of(root, child(root, "RequestID") ? "RequestID"
                  : child(root, "RequestId") ? "RequestId" : "requestId",
            out->request_id, sizeof(out->request_id));
    text_of(root, "nextToken", out->next_token, sizeof(out->next_token));
    add_instances(child(root, "instancesSet"), out);
    for (const xmlNode *res = child(child(root, "reservationSet"), "item"); res; res = res->next)
        if (named(res, "item"))
            add_instances(child(res, "instancesSet"), out);
    add_prices(child(root, "spotPriceHistorySet"), out);
    if (!e && !strstr((const char *)root->name, "Response")) {
        char name[64];
        snprintf(name, sizeof(name), "%s", (const char *)root->name);
        xmlFreeDoc(doc);
        spw_ec2_result_clear(out);
        return spw_errorf(err, "the answer's root element <%s> is not an EC2 response", name);
    }
    xmlFreeDoc(doc);
    return 0;
}

int spw_aws_xml_text(const char *xml, size_t len, const char *const *path, char *out,
                     size_t outlen)
{
    out[0] = '\0';
    xmlDoc *doc = xmlReadMemory(xml, (int)len, "aws.xml", NULL,
                                XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
    xmlNode *n = doc ? xmlDocGetRootElement(doc) : NULL;
    for (size_t i = 0; n && path[i]; i++)
        n = child(n, path[i]);
    if (n)
        text_of(n, NULL, out, outlen);
    xmlFreeDoc(doc);
    return n ? 0 : -1;
}

const char *spw_ec2_tag(const spw_ec2_instance_t *inst, const char *key)
{
    for (size_t i = 0; i < inst->ntags; i++)
        if (strcmp(inst->tags[i].key, key) == 0)
            return inst->tags[i].value;
    return NULL;
}

/* ---- Calls ------------------------------------------------------------- */

int spw_ec2_call(const spw_aws_endpoint_t *ep, const spw_aws_creds_t *creds, time_t now,
                 const char *body, spw_ec2_result_t *out, long *http_status, spw_error_t *err)
{
    spw_strbuf_t resp = {0};
    spw_ec2_result_clear(out);
    if (spw_aws_post(ep, creds, now, body, http_status, &resp, err) < 0)
        return -1;
    spw_error_t perr = {{0}};
    int rc = spw_ec2_parse(resp.s ? resp.s : "", resp.len, out, &perr);
    if (rc < 0)
        spw_errorf(err, "%s: HTTP %ld and %s", ep->url, *http_status, perr.text);
    else if (*http_status >= 300 && !out->error_code[0])
        rc = spw_errorf(err, "%s: HTTP %ld without an EC2 error code", ep->url, *http_status);
    free(resp.s);
    return rc;
}
