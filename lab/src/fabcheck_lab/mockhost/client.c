/* fabcheck-mock-client: one mock tool call, answered by the lab's tool server over a Unix socket.
 *
 * Compiled by `fabcheck lab up` (when a C compiler is present) and linked under each served tool name in
 * the nodes' /usr/local/bin. It sends its argv (any bytes; argv cannot hold NUL, so NUL ends each field),
 * its pid and a few environment variables the tools' output depends on, then writes the server's stdout
 * and stderr bytes and exits with its code. It never reads stdin (no served tool does). Whenever the
 * server cannot answer exactly (no server, a short reply, or a "D" reply) it runs the interpreter path
 * instead: exec of the fabcheck-mock dispatcher that sits next to it, with the same arguments.
 *
 * Build: cc -O2 -DSOCKET_PATH='"/var/lib/fabcheck-mock/.tools.sock"' -o fabcheck-mock-client client.c
 */
#define _GNU_SOURCE /* memrchr */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#ifndef SOCKET_PATH
#error "SOCKET_PATH must be defined"
#endif
#define MAGIC "fabcheck-mock/1"
#define DISPATCHER "fabcheck-mock"

static const char *const FORWARDED_ENV[] = {"LANG", "LC_ALL", "LC_CTYPE", "TZ", "COLUMNS", "POSIXLY_CORRECT"};
#define N_FORWARDED (sizeof FORWARDED_ENV / sizeof FORWARDED_ENV[0])

struct buffer {
    char *data;
    size_t len, cap;
};

static int grow(struct buffer *b, size_t more) {
    if (b->len + more <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + more)
        cap *= 2;
    char *data = realloc(b->data, cap);
    if (!data)
        return -1;
    b->data = data;
    b->cap = cap;
    return 0;
}

static int put(struct buffer *b, const char *field) {
    size_t n = strlen(field) + 1; /* with its NUL */
    if (grow(b, n))
        return -1;
    memcpy(b->data + b->len, field, n);
    b->len += n;
    return 0;
}

static int put_number(struct buffer *b, long value) {
    char text[32];
    snprintf(text, sizeof text, "%ld", value);
    return put(b, text);
}

static const char *tool_name(const char *argv0) {
    const char *slash = strrchr(argv0, '/');
    return slash ? slash + 1 : argv0;
}

/* The interpreter path: what the tool was before the server existed. */
static void run_direct(int argc, char **argv) {
    char path[4096];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - sizeof DISPATCHER - 1);
    char *slash = n > 0 ? memrchr(path, '/', (size_t)n) : NULL;
    if (slash) {
        memcpy(slash + 1, DISPATCHER, sizeof DISPATCHER);
    } else {
        snprintf(path, sizeof path, "/usr/local/bin/%s", DISPATCHER);
    }
    char **args = calloc((size_t)argc + 2, sizeof *args);
    if (!args) {
        fputs("fabcheck-mock-client: out of memory\n", stderr);
        _exit(127);
    }
    args[0] = DISPATCHER;
    args[1] = (char *)tool_name(argv[0]);
    for (int i = 1; i < argc; i++)
        args[i + 1] = argv[i];
    execv(path, args);
    fprintf(stderr, "fabcheck-mock-client: cannot run %s: %s\n", path, strerror(errno));
    _exit(127);
}

static int write_all(int fd, const char *data, size_t len) {
    while (len > 0) {
        ssize_t n = write(fd, data, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

static int build_request(struct buffer *b, int argc, char **argv) {
    size_t n_env = 0;
    for (size_t i = 0; i < N_FORWARDED; i++)
        n_env += getenv(FORWARDED_ENV[i]) != NULL;
    if (put(b, MAGIC) || put_number(b, (long)getpid()) || put_number(b, (long)n_env))
        return -1;
    for (size_t i = 0; i < N_FORWARDED; i++) {
        const char *value = getenv(FORWARDED_ENV[i]);
        if (!value)
            continue;
        size_t n = strlen(FORWARDED_ENV[i]) + 1 + strlen(value) + 1;
        if (grow(b, n))
            return -1;
        b->len += (size_t)snprintf(b->data + b->len, n, "%s=%s", FORWARDED_ENV[i], value) + 1;
    }
    if (put_number(b, (long)argc) || put(b, tool_name(argv[0])))
        return -1;
    for (int i = 1; i < argc; i++)
        if (put(b, argv[i]))
            return -1;
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 1) {
        fputs("fabcheck-mock-client: started without a program name\n", stderr);
        return 127;
    }
    if (getenv("FABCHECK_MOCK_DIRECT") || getenv("FABCHECK_MOCK_STATE") ||
        getenv("FABCHECK_MOCK_SYSCLASS") || getenv("FABCHECK_MOCK_ETC"))
        run_direct(argc, argv); /* asked for, or pointed at another node's files: only the old path knows */

    struct sockaddr_un address = {.sun_family = AF_UNIX};
    strncpy(address.sun_path, SOCKET_PATH, sizeof address.sun_path - 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&address, sizeof address) != 0)
        run_direct(argc, argv);

    struct buffer request = {0};
    if (build_request(&request, argc, argv) || write_all(fd, request.data, request.len) ||
        shutdown(fd, SHUT_WR) != 0)
        run_direct(argc, argv);

    struct buffer reply = {0};
    for (;;) {
        if (grow(&reply, 65536))
            run_direct(argc, argv);
        ssize_t n = read(fd, reply.data + reply.len, reply.cap - reply.len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            run_direct(argc, argv);
        if (n == 0)
            break;
        reply.len += (size_t)n;
    }
    close(fd);

    char *newline = reply.len ? memchr(reply.data, '\n', reply.len) : NULL;
    int code;
    unsigned long out_len, err_len;
    if (!newline || reply.data[0] == 'D')
        run_direct(argc, argv);
    *newline = '\0';
    if (sscanf(reply.data, "%d %lu %lu", &code, &out_len, &err_len) != 3)
        run_direct(argc, argv);
    char *body = newline + 1;
    if ((size_t)(reply.data + reply.len - body) != out_len + err_len)
        run_direct(argc, argv);
    /* stderr first: the interpreter path writes stderr at once and flushes stdout (a pipe) at exit. */
    if (write_all(2, body + out_len, err_len) != 0 && errno == EPIPE)
        return 141;
    if (write_all(1, body, out_len) != 0 && errno == EPIPE)
        return 141;
    return code;
}
