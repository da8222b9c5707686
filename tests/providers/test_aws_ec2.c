/* test_aws_ec2.c: the EC2 Query API of providers/aws/ec2.c against published
 * data (the shared contract data; skipped, saying so, where absent): the
 * sample answers of jclouds and libcloud and botocore's ec2Query output
 * vectors parsed; botocore's ec2Query input vectors reproduced by the form
 * builder; and every parameter of the four requests the provider sends
 * checked against EC2's own service model (member names, list numbering,
 * required members).  Plus what needs no data: malformed answers. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tap.h"
#include "aws_data.h"
#include "providers/aws/ec2.h"
#include "util/file.h"

static char ec2dir[1024];       /* DATA/contracts/ec2 */

/* Parses ec2dir/SUB into r; 0 on success. */
static int parse_file(const char *sub, spw_ec2_result_t *r)
{
    char path[2048];
    size_t len;
    spw_error_t err = {{0}};
    snprintf(path, sizeof(path), "%s/%s", ec2dir, sub);
    char *xml = spw_read_file(path, &len, &err);
    int rc = xml ? spw_ec2_parse(xml, len, r, &err) : -1;
    if (rc < 0)
        diag("%s: %s", sub, err.text);
    free(xml);
    return rc;
}

static void sample_answers(void)
{
    spw_ec2_result_t r = {0};
    ok(parse_file("jclouds/run_instances_1.xml", &r) == 0 && r.ninst == 1,
       "jclouds RunInstances: one instance");
    is_str(r.inst[0].instance_id, "i-8949f0e8", "  its id");
    ok(strcmp(r.inst[0].state, "pending") == 0 && r.inst[0].state_code == 0,
       "  pending, code 0");
    is_str(r.inst[0].state_reason, "pending", "  stateReason code");
    is_str(r.inst[0].zone, "us-east-1d", "  placement zone");
    is_str(r.inst[0].instance_type, "cc1.4xlarge", "  type");
    is_double(r.inst[0].launch_s, 1311932808, 0, "  launchTime 2011-07-29T09:46:48.000Z");
    is_str(r.request_id, "7faf9500-67ef-484b-9fa5-73b6df638bc8", "  requestId");
    is_str(r.error_code, "", "  no error");

    ok(parse_file("jclouds/describe_instances_latest.xml", &r) == 0 && r.ninst >= 2,
       "jclouds DescribeInstances: reservations flattened (%zu)", r.ninst);
    is_str(r.inst[0].instance_id, "i-911444f0", "  first id");
    ok(strcmp(r.inst[0].state, "running") == 0 && r.inst[0].state_code == 16, "  running, 16");
    is_str(r.inst[0].public_ip, "174.129.173.155", "  public IP (ipAddress)");
    is_str(r.inst[0].private_ip, "10.212.81.7", "  private IP");
    is_str(spw_ec2_tag(&r.inst[0], "Name"), "ec2-o", "  tag Name");
    is_str(spw_ec2_tag(&r.inst[0], "Empty"), "", "  an empty <value /> is an empty tag");
    ok(spw_ec2_tag(&r.inst[0], SPW_EC2_TAG_DAEMON) == NULL, "  no spillway tag");

    ok(parse_file("jclouds/describe_instances_2.xml", &r) == 0 && r.ninst == 18,
       "jclouds DescribeInstances: 18 instances (%zu)", r.ninst);
    int term = 0, run = 0, pend = 0, spot = 0, user = 0;
    for (size_t i = 0; i < r.ninst; i++) {
        term += strcmp(r.inst[i].state, "terminated") == 0 && r.inst[i].state_code == 48;
        run += strcmp(r.inst[i].state, "running") == 0 && r.inst[i].state_code == 16;
        pend += strcmp(r.inst[i].state, "pending") == 0 && r.inst[i].state_code == 0;
        spot += r.inst[i].spot;
        user += strcmp(r.inst[i].state_reason, "Client.UserInitiatedShutdown") == 0;
    }
    ok(term == 14 && run == 2 && pend == 2, "  14 terminated, 2 running, 2 pending (%d %d %d)",
       term, run, pend);
    is(user, 14, "  the terminated ones' state reason Client.UserInitiatedShutdown");
    is(spot, 3, "  three spot instances (instanceLifecycle)");

    ok(parse_file("jclouds/describe_spot_price_history.xml", &r) == 0 && r.nprices == 3,
       "jclouds DescribeSpotPriceHistory: 3 prices");
    is_double(r.prices[0].price_usd_per_h, 0.013, 1e-9, "  spotPrice 0.013000");
    is_str(r.prices[1].instance_type, "m1.large", "  instanceType");
    is_str(r.prices[2].zone, "us-west-1c", "  availabilityZone");
    is_str(r.prices[0].product, "SUSE Linux", "  productDescription");
    is_double(r.prices[0].time_s, 1299500239, 0, "  timestamp 2011-03-07T12:17:19.000Z");
    is_str(r.next_token, "", "  no nextToken: the last page");

    ok(parse_file("jclouds/terminate_instances.xml", &r) == 0 && r.ninst >= 1,
       "jclouds TerminateInstances");
    ok(strcmp(r.inst[0].state, "shutting-down") == 0 && r.inst[0].state_code == 32,
       "  currentState shutting-down, 32");

    ok(parse_file("jclouds/dry_run.xml", &r) == 0, "jclouds dry_run.xml parses");
    is_str(r.error_code, "DryRunOperation", "  Errors/Error/Code");
    ok(strstr(r.error_message, "DryRun flag is set") != NULL, "  Errors/Error/Message");
    is_str(r.request_id, "344ef005-e34b-42fb-a334-1180fe317e7c", "  RequestID");

    ok(parse_file("libcloud/run_instances_spot.xml", &r) == 0 && r.ninst == 1 && r.inst[0].spot,
       "libcloud RunInstances spot: instanceLifecycle spot");
    is_str(r.inst[0].instance_id, "i-2ba64344", "  its id");
    ok(parse_file("libcloud/describe_instances.xml", &r) == 0 && r.ninst >= 2,
       "libcloud DescribeInstances (2016-11-15 namespace)");
    ok(strcmp(r.inst[0].state, "stopped") == 0 && r.inst[0].state_code == 80, "  stopped, 80");
    ok(strcmp(r.inst[0].public_ip, "1.2.3.4") == 0 &&
           strcmp(r.inst[0].private_ip, "10.211.11.211") == 0,
       "  addresses");
    is_str(spw_ec2_tag(&r.inst[1], "Name"), "Test Server 2", "  tags of the second");
    ok(parse_file("libcloud/terminate_instances.xml", &r) == 0 && r.ninst == 1 &&
           strcmp(r.inst[0].state, "shutting-down") == 0,
       "libcloud TerminateInstances");
    ok(parse_file("libcloud/run_instances.xml", &r) == 0 && r.ninst >= 1 && !r.inst[0].spot,
       "libcloud RunInstances: on demand");
    spw_ec2_result_clear(&r);
}

/* botocore's ec2Query output vectors: every error case's code and message. */
static void output_vectors(json_t *suites)
{
    size_t i, j;
    json_t *s, *c;
    int n = 0;
    json_array_foreach(suites, i, s) {
        json_array_foreach(json_object_get(s, "cases"), j, c) {
            const char *code = json_string_value(json_object_get(c, "errorCode"));
            const char *body = json_string_value(
                json_object_get(json_object_get(c, "response"), "body"));
            if (!code || !body)
                continue;
            const char *msg = json_string_value(json_object_get(c, "errorMessage"));
            spw_ec2_result_t r = {0};
            ok(spw_ec2_parse(body, strlen(body), &r, NULL) == 0 &&
                   strcmp(r.error_code, code) == 0 && strcmp(r.request_id, "foo-id") == 0 &&
                   (!msg || strcmp(r.error_message, msg) == 0),
               "output vector %s: code %s, RequestID", json_string_value(json_object_get(c, "id")),
               code);
            spw_ec2_result_clear(&r);
            n++;
        }
    }
    ok(n >= 2, "the error vectors were found (%d)", n);
}

/* The serialized body of input vector id, with our API version. */
static char *input_body(json_t *suites, const char *id)
{
    size_t i, j;
    json_t *s, *c;
    json_array_foreach(suites, i, s) {
        json_array_foreach(json_object_get(s, "cases"), j, c) {
            const char *cid = json_string_value(json_object_get(c, "id"));
            if (cid && strcmp(cid, id) == 0) {
                const char *b = json_string_value(
                    json_object_get(json_object_get(c, "serialized"), "body"));
                const char *v = b ? strstr(b, "&Version=2020-01-08") : NULL;
                if (!v)
                    return NULL;
                spw_strbuf_t out = {0};
                spw_strbuf_addn(&out, b, (size_t)(v - b));
                spw_strbuf_add(&out, "&Version=" SPW_EC2_VERSION);
                spw_strbuf_add(&out, v + strlen("&Version=2020-01-08"));
                return out.s;
            }
        }
    }
    return NULL;
}

static void check_input(json_t *suites, const char *id, const char *action,
                        const char *const *kv)
{
    spw_strbuf_t b = {0};
    spw_ec2_form_init(&b, action);
    for (size_t i = 0; kv[i]; i += 2)
        spw_ec2_form_add(&b, kv[i], kv[i + 1]);
    char *want = input_body(suites, id);
    is_str(b.s, want, "input vector %s", id);
    free(want);
    free(b.s);
}

static void input_vectors(json_t *suites)
{
    check_input(suites, "Ec2Lists", "QueryLists",
                (const char *const[]){"ListArg.1", "foo", "ListArg.2", "bar", "ListArg.3", "baz",
                                      "ComplexListArg.1.Hi", "hello", "ComplexListArg.2.Hi",
                                      "hola", NULL});
    check_input(suites, "Ec2NestedStructures", "NestedStructures",
                (const char *const[]){"Nested.StringArg", "foo", "Nested.OtherArg", "true",
                                      "Nested.RecursiveArg.StringArg", "baz", NULL});
    check_input(suites, "Ec2ListMemberWithXmlName", "QueryLists",
                (const char *const[]){"Hi.1", "A", "Hi.2", "B", NULL});
    check_input(suites, "Ec2ListNestedStructWithList", "QueryLists",
                (const char *const[]){"NestedWithList.ListArg.1", "A",
                                      "NestedWithList.ListArg.2", "B", NULL});
    check_input(suites, "Ec2TimestampsInput", "QueryTimestamps",
                (const char *const[]){"NormalFormat", "2015-01-25T08:00:00Z", "EpochMember",
                                      "1422172800", "EpochTarget", "1422172800", NULL});
    check_input(suites, "Ec2SimpleInputParamsBlob", "SimpleInputParams",
                (const char *const[]){"Qux", "dmFsdWU=", NULL});
    check_input(suites, "Ec2ProtocolIdempotencyTokenAutoFillIsSet",
                "QueryIdempotencyTokenAutoFill",
                (const char *const[]){"Token", "00000000-0000-4000-8000-000000000123", NULL});
}

/* The EC2 wire name of a member: queryName, else locationName capitalised,
 * else the member's name. */
static void wire_name(const char *member, json_t *m, char *out, size_t len)
{
    const char *q = json_string_value(json_object_get(m, "queryName"));
    const char *l = json_string_value(json_object_get(m, "locationName"));
    snprintf(out, len, "%s", q ? q : l ? l : member);
    if (!q && l && out[0] >= 'a' && out[0] <= 'z')
        out[0] = (char)(out[0] - 'a' + 'A');
}

/* Whether the dotted key names a scalar member under shape sname; the
 * reason in why when not. */
static int key_valid(json_t *shapes, const char *sname, const char *key, char *why, size_t len)
{
    char seg[128];
    const char *p = key;
    json_t *shape = json_object_get(shapes, sname);
    while (shape) {
        const char *type = json_string_value(json_object_get(shape, "type"));
        if (strcmp(type, "structure") && strcmp(type, "list")) {
            if (*p) {
                snprintf(why, len, "%.100s: %.100s goes below scalar %.100s", key, p, sname);
                return 0;
            }
            return 1;
        }
        if (!*p) {
            snprintf(why, len, "%.100s: ends at %.20s %.100s", key, type, sname);
            return 0;
        }
        size_t n = strcspn(p, ".");
        snprintf(seg, sizeof(seg), "%.*s", (int)n, p);
        p += n + (p[n] == '.');
        if (strcmp(type, "list") == 0) {
            /* ec2 lists are flattened: KEY.N, N from 1. */
            if (atoi(seg) < 1 || strspn(seg, "0123456789") != strlen(seg)) {
                snprintf(why, len, "%s: list %s wants an index from 1, not '%s'", key, sname, seg);
                return 0;
            }
            sname = json_string_value(json_object_get(json_object_get(shape, "member"), "shape"));
            shape = json_object_get(shapes, sname);
            continue;
        }
        const char *mname;
        json_t *m, *found = NULL;
        json_object_foreach(json_object_get(shape, "members"), mname, m) {
            char w[128];
            wire_name(mname, m, w, sizeof(w));
            if (strcmp(w, seg) == 0)
                found = m;
        }
        if (!found) {
            snprintf(why, len, "%.100s: %.100s has no member %.100s", key, sname, seg);
            return 0;
        }
        sname = json_string_value(json_object_get(found, "shape"));
        shape = json_object_get(shapes, sname);
    }
    snprintf(why, len, "%.100s: no shape %.100s in the model", key, sname ? sname : "?");
    return 0;
}

/* Checks every parameter of body against operation op's input shape, and
 * that its required members are there. */
static void check_model(json_t *model, const char *op, const char *body)
{
    json_t *shapes = json_object_get(model, "shapes");
    const char *in = json_string_value(json_object_get(
        json_object_get(json_object_get(json_object_get(model, "operations"), op), "input"),
        "shape"));
    int bad = 0;
    char why[512] = "";
    spw_strbuf_t keys = {0};
    for (const char *p = body; *p;) {
        size_t n = strcspn(p, "&"), k = strcspn(p, "=");
        char key[256];
        snprintf(key, sizeof(key), "%.*s", (int)(k < n ? k : n), p);
        spw_strbuf_printf(&keys, "|%s|", key);
        if (strcmp(key, "Action") && strcmp(key, "Version") &&
            !key_valid(shapes, in, key, why, sizeof(why)) && !bad++)
            diag("%s", why);
        p += n + (p[n] == '&');
    }
    size_t i;
    json_t *req;
    json_array_foreach(json_object_get(json_object_get(shapes, in), "required"), i, req) {
        char w[160];
        json_t *m = json_object_get(json_object_get(json_object_get(shapes, in), "members"),
                                    json_string_value(req));
        wire_name(json_string_value(req), m, w, sizeof(w) - 2);
        char pat[168], list[168];
        snprintf(pat, sizeof(pat), "|%s|", w);
        snprintf(list, sizeof(list), "|%s.", w);
        if (!strstr(keys.s, pat) && !strstr(keys.s, list) && !bad++)
            diag("%s: required member %s missing", op, w);
    }
    ok(!bad, "%s: every parameter is a member of %s in EC2's model, required ones present", op, in);
    free(keys.s);
}

static void model_checks(json_t *model)
{
    /* The checker itself refuses what EC2 would: member names rather than
     * wire names, lists from 0, unknown members. */
    json_t *shapes = json_object_get(model, "shapes");
    char why[512];
    ok(!key_valid(shapes, "RunInstancesRequest", "SecurityGroupIds.1", why, sizeof(why)) &&
           !key_valid(shapes, "RunInstancesRequest", "TagSpecification.0.ResourceType", why,
                      sizeof(why)) &&
           !key_valid(shapes, "RunInstancesRequest", "Placement.Zone", why, sizeof(why)) &&
           key_valid(shapes, "RunInstancesRequest", "TagSpecification.2.Tag.3.Value", why,
                     sizeof(why)),
       "the model check refuses SecurityGroupIds.1, index 0 and unknown members");
    spw_strbuf_t b = {0};
    const char *sgs[] = {"sg-1", "sg-2", NULL};
    spw_ec2_run_t r = {.image_id = "ami-0abc", .instance_type = "g4dn.12xlarge",
                       .zone = "us-east-1a", .subnet_id = "subnet-1", .security_groups = sgs,
                       .key_name = "ops", .ssh_public_key = "ssh-ed25519 AAAAC3Nz spillway",
                       .count = 2, .spot = 1, .max_price_usd_per_h = 1.5,
                       .client_token = "d1-job7-a1", .daemon_id = "d1", .job_id = "job7",
                       .dry_run = 1};
    spw_ec2_run_form(&r, &b);
    check_model(model, "RunInstances", b.s);
    free(b.s);
    b = (spw_strbuf_t){0};
    const char *ids[] = {"i-1", "i-2"};
    spw_ec2_describe_form("d1", ids, 2, "tok", 0, &b);
    check_model(model, "DescribeInstances", b.s);
    free(b.s);
    b = (spw_strbuf_t){0};
    spw_ec2_describe_form("d1", NULL, 0, NULL, 100, &b);
    check_model(model, "DescribeInstances", b.s);
    free(b.s);
    b = (spw_strbuf_t){0};
    spw_ec2_terminate_form(ids, 2, 1, &b);
    check_model(model, "TerminateInstances", b.s);
    free(b.s);
    b = (spw_strbuf_t){0};
    spw_ec2_spot_price_form("g4dn.xlarge", "us-east-1a", 1440938160, &b);
    check_model(model, "DescribeSpotPriceHistory", b.s);
    free(b.s);
}

/* What the provider sends, without any data. */
static void forms(void)
{
    spw_strbuf_t b = {0};
    spw_ec2_run_t r = {.image_id = "ami-1", .instance_type = "p3.2xlarge", .count = 3,
                       .client_token = "tok-1", .daemon_id = "d 1", .job_id = "j/1",
                       .ssh_public_key = "ssh-ed25519 AAAA k"};
    spw_ec2_run_form(&r, &b);
    ok(strstr(b.s, "&MinCount=3&MaxCount=3") && strstr(b.s, "&ClientToken=tok-1"),
       "RunInstances: MinCount = MaxCount, ClientToken");
    ok(strstr(b.s, "TagSpecification.1.ResourceType=instance") &&
           strstr(b.s, "TagSpecification.1.Tag.1.Key=spillway%3Adaemon&"
                       "TagSpecification.1.Tag.1.Value=d%201") &&
           strstr(b.s, "Tag.2.Value=j%2F1") && strstr(b.s, "Tag.3.Value=tok-1"),
       "RunInstances: daemon, job and token tags, encoded");
    ok(!strstr(b.s, "InstanceMarketOptions") && !strstr(b.s, "DryRun"),
       "on demand, no dry run: neither is sent");
    /* "#cloud-config\nssh_authorized_keys:\n  - ssh-ed25519 AAAA k\n" */
    ok(strstr(b.s, "UserData=I2Nsb3VkLWNvbmZpZwpzc2hfYXV0aG9yaXplZF9rZXlzOgogIC0gc3NoLWVkMjU1"
                   "MTkgQUFBQSBrCg%3D%3D") != NULL,
       "UserData: #cloud-config with ssh_authorized_keys, base64");
    free(b.s);
    b = (spw_strbuf_t){0};
    spw_ec2_describe_form("d1", NULL, 0, "next+page", 50, &b);
    is_str(b.s, "Action=DescribeInstances&Version=2016-11-15&Filter.1.Name=tag%3Aspillway%3Adaemon"
                "&Filter.1.Value.1=d1&MaxResults=50&NextToken=next%2Bpage",
           "DescribeInstances: the daemon's tag, a page and the next token");
    free(b.s);

    spw_ec2_result_t res = {0};
    spw_error_t err = {{0}};
    ok(spw_ec2_parse("<html>503 Service Unavailable", 29, &res, &err) < 0 && err.text[0],
       "not XML: refused (%s)", err.text);
    ok(spw_ec2_parse("<Foo/>", 6, &res, &err) < 0 && strstr(err.text, "<Foo>"),
       "not an EC2 response: refused (%s)", err.text);
    const char *sts = "<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code>"
                      "<Message>no</Message></Error><RequestId>r1</RequestId></ErrorResponse>";
    ok(spw_ec2_parse(sts, strlen(sts), &res, &err) == 0 &&
           strcmp(res.error_code, "AccessDenied") == 0 && strcmp(res.request_id, "r1") == 0,
       "the Query services' ErrorResponse (STS) too");
    spw_ec2_result_clear(&res);
    is_double(spw_ec2_time_parse("2015-08-30T12:36:00.000Z"), 1440938160, 0, "time parse");
}

int main(void)
{
    forms();
    if (!aws_data_dir("ec2", ec2dir, sizeof(ec2dir))) {
        printf("ok %d # skip %s not found: the EC2 sample answers and botocore vectors live "
               "in the shared contract data (set SPILLWAY_DATA or run from the repository "
               "root with ../shared/data)\n", ++tap_run, ec2dir);
        return done_testing();
    }
    sample_answers();
    char path[2048];
    json_error_t jerr;
    snprintf(path, sizeof(path), "%s/botocore/protocol-tests-output-ec2.json", ec2dir);
    json_t *out = json_load_file(path, 0, &jerr);
    snprintf(path, sizeof(path), "%s/botocore/protocol-tests-input-ec2.json", ec2dir);
    json_t *in = json_load_file(path, 0, &jerr);
    snprintf(path, sizeof(path), "%s/botocore/ec2-2016-11-15-service-2.subset.json", ec2dir);
    json_t *model = json_load_file(path, 0, &jerr);
    ok(out && in && model, "botocore's vectors and EC2's model load");
    if (out && in && model) {
        output_vectors(out);
        input_vectors(in);
        model_checks(model);
    }
    json_decref(out);
    json_decref(in);
    json_decref(model);
    return done_testing();
}
