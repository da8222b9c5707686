/* ec2.h: the EC2 Query API (version 2016-11-15) that the aws provider
 * speaks: the form bodies of RunInstances, DescribeInstances,
 * TerminateInstances and DescribeSpotPriceHistory, their XML answers parsed
 * with libxml2, and one signed POST over libcurl.  No state: the provider
 * (aws.c) keeps it. */
#ifndef SPW_PROVIDERS_AWS_EC2_H
#define SPW_PROVIDERS_AWS_EC2_H

#include <stddef.h>
#include <time.h>

#include "providers/aws/http.h"
#include "providers/aws/sigv4.h"
#include "util/error.h"
#include "util/strbuf.h"

#define SPW_EC2_VERSION "2016-11-15"
/* The tags spillway puts on what it buys, and filters by. */
#define SPW_EC2_TAG_DAEMON "spillway:daemon"
#define SPW_EC2_TAG_JOB "spillway:job"
#define SPW_EC2_TAG_TOKEN "spillway:token"
#define SPW_EC2_MAX_TAGS 8      /* tags kept per instance; more are dropped */

/* ---- Requests ---------------------------------------------------------- */

/* Starts a form body "Action=ACTION&Version=2016-11-15" in b (zeroed). */
void spw_ec2_form_init(spw_strbuf_t *b, const char *action);
/* Appends "&KEY=VALUE", both percent-encoded. */
void spw_ec2_form_add(spw_strbuf_t *b, const char *key, const char *value);

/* What RunInstances asks for.  Borrowed for the call. */
typedef struct spw_ec2_run {
    const char *image_id;       /* ImageId: an AMI id ("ami-...") */
    const char *instance_type;  /* InstanceType: "g4dn.12xlarge" */
    const char *zone;           /* Placement.AvailabilityZone; NULL/"" = any */
    const char *subnet_id;      /* SubnetId (the zone's); NULL = the default VPC's */
    const char *const *security_groups;  /* SecurityGroupId.N, NULL-terminated;
                                   NULL = the VPC's default group */
    const char *key_name;       /* KeyName: an EC2 key pair; NULL = none */
    const char *ssh_public_key; /* one OpenSSH public key line, sent as the
                                   cloud-init user-data (#cloud-config,
                                   ssh_authorized_keys), base64; NULL = none */
    unsigned count;             /* MinCount = MaxCount = count: all or none */
    int spot;                   /* 1: InstanceMarketOptions spot, one-time,
                                   terminate on interruption */
    double max_price_usd_per_h; /* spot: SpotOptions.MaxPrice; 0 = the
                                   on-demand price cap EC2 applies */
    const char *client_token;   /* ClientToken: EC2's idempotency key (the
                                   daemon's launch token), <= 64 ASCII */
    const char *daemon_id;      /* tag spillway:daemon */
    const char *job_id;         /* tag spillway:job */
    int dry_run;                /* 1: DryRun=true, a permission check */
} spw_ec2_run_t;

/* Writes the RunInstances form body for r into b (zeroed). */
void spw_ec2_run_form(const spw_ec2_run_t *r, spw_strbuf_t *b);

/* DescribeInstances of this daemon's instances (Filter tag:spillway:daemon),
 * of ids[0 .. n-1] when n > 0, one page of at most max_results (5..1000;
 * 0 = EC2's default, and no MaxResults with ids) after next_token (NULL or
 * "" = the first page). */
void spw_ec2_describe_form(const char *daemon_id, const char *const *ids, size_t n,
                           const char *next_token, int max_results, spw_strbuf_t *b);

/* TerminateInstances of ids[0 .. n-1]. */
void spw_ec2_terminate_form(const char *const *ids, size_t n, int dry_run, spw_strbuf_t *b);

/* DescribeSpotPriceHistory of one type (Linux/UNIX) since start_s (Unix
 * seconds), in zone (NULL/"" = every zone of the region). */
void spw_ec2_spot_price_form(const char *instance_type, const char *zone, time_t start_s,
                             spw_strbuf_t *b);

/* ---- Answers ----------------------------------------------------------- */

/* One tag. */
typedef struct spw_ec2_tag {
    char key[128];              /* tag key (EC2: at most 128) */
    char value[256];            /* tag value (EC2: at most 256), may be "" */
} spw_ec2_tag_t;

/* One instance as RunInstances, DescribeInstances or TerminateInstances
 * tell it. */
typedef struct spw_ec2_instance {
    char instance_id[32];       /* "i-0abc..." */
    char state[24];             /* pending, running, shutting-down, terminated,
                                   stopping, stopped (Terminate: currentState) */
    int state_code;             /* 0, 16, 32, 48, 64, 80; -1 = not given */
    char state_reason[64];      /* stateReason code
                                   ("Server.SpotInstanceTermination"), "" */
    char state_message[256];    /* stateReason message, "" */
    char private_ip[64];        /* privateIpAddress, "" */
    char public_ip[64];         /* ipAddress, "" */
    char instance_type[64];     /* instanceType */
    char zone[64];              /* placement.availabilityZone */
    char client_token[72];      /* clientToken, "" */
    int spot;                   /* instanceLifecycle = spot */
    double launch_s;            /* launchTime, Unix seconds; -1 = not given */
    spw_ec2_tag_t tags[SPW_EC2_MAX_TAGS];  /* tagSet, in order */
    size_t ntags;               /* entries in tags */
} spw_ec2_instance_t;

/* One spot price. */
typedef struct spw_ec2_spot_price {
    char instance_type[64];     /* instanceType */
    char zone[64];              /* availabilityZone */
    char product[64];           /* productDescription ("Linux/UNIX") */
    double price_usd_per_h;     /* spotPrice */
    double time_s;              /* timestamp, Unix seconds */
} spw_ec2_spot_price_t;

/* A parsed answer.  Zero it before the first parse; clear it after. */
typedef struct spw_ec2_result {
    char request_id[64];        /* requestId or RequestID */
    char error_code[64];        /* Errors/Error/Code (the first); "" = success */
    char error_message[512];    /* Errors/Error/Message */
    spw_ec2_instance_t *inst;   /* owned: instancesSet items, reservations
                                   flattened, in document order */
    size_t ninst;               /* entries in inst */
    spw_ec2_spot_price_t *prices;  /* owned: spotPriceHistorySet items */
    size_t nprices;             /* entries in prices */
    char next_token[1024];      /* nextToken; "" = the last page */
} spw_ec2_result_t;

/* Parses an EC2 answer (a *Response or the <Response><Errors> envelope) into
 * out (cleared first).  Returns 0 (check out->error_code), or -1 with a
 * sentence in err when the text is not such XML. */
int spw_ec2_parse(const char *xml, size_t len, spw_ec2_result_t *out, spw_error_t *err);

/* Frees what r owns and zeroes it; NULL-safe. */
void spw_ec2_result_clear(spw_ec2_result_t *r);

/* The value of tag key on inst, NULL if it has none. */
const char *spw_ec2_tag(const spw_ec2_instance_t *inst, const char *key);

/* Copies the text at path (element names from below the root, NULL-
 * terminated: {"AssumeRoleResult", "Credentials", "AccessKeyId", NULL}) of
 * an XML answer to out (trimmed); returns 0, or -1 when the text is not XML
 * or has no such element (out then ""). */
int spw_aws_xml_text(const char *xml, size_t len, const char *const *path, char *out,
                     size_t outlen);

/* Parses "2011-03-07T12:17:19.000Z" to Unix seconds; -1 if malformed. */
double spw_ec2_time_parse(const char *s);

/* ---- Calls ------------------------------------------------------------- */

/* POSTs the form body to ep signed with creds at time now (http.h) and
 * parses the answer into out (cleared first).  Returns 0 with the answer,
 * an EC2 error included (out->error_code; *http_status says which status),
 * or -1 with a sentence in err when there is no answer (connection, timeout,
 * a body that is not EC2's XML), *http_status then 0 or the status. */
int spw_ec2_call(const spw_aws_endpoint_t *ep, const spw_aws_creds_t *creds, time_t now,
                 const char *body, spw_ec2_result_t *out, long *http_status, spw_error_t *err);

#endif
