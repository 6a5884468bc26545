/* Check a RoPE written in C against posenc_ref's reference vectors (.safetensors).
 *
 *   cc -O2 -o read_vectors read_vectors.c -lm
 *   ./read_vectors vectors.safetensors rope/far/float32
 *
 * It reads one case (q in float32 or bfloat16, its positions, the expected q_rot and the
 * per-element tolerance tol_q, float64), rotates q with its own float32 RoPE and counts the
 * elements within tolerance. What the RoPE needs comes from the file's flat metadata entries
 * (GROUP/base, GROUP/layout, GROUP/head_dim, GROUP/rotary_dim, CASE/dtype): strings in the
 * safetensors header, found with strstr. Plain RoPE only: for a scaled model (YaRN, Llama 3,
 * LongRoPE) use the file's GROUP/inv_freq tensor instead of the base. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *header;   /* the JSON header, NUL-terminated */
static uint8_t *data;  /* the bytes after it */
static size_t data_size;

static void fail(const char *what, const char *name) {
    fprintf(stderr, "%s: %s\n", what, name);
    exit(2);
}

/* The string value of a flat metadata entry, e.g. "rope/base" -> "1000000.0". */
static const char *entry(const char *key, char *value, size_t size) {
    char pattern[300];
    snprintf(pattern, sizeof pattern, "\"%s\":\"", key);
    const char *at = strstr(header, pattern);
    if (!at) fail("no metadata entry", key);
    at += strlen(pattern);
    size_t n = strcspn(at, "\"");
    if (n >= size) fail("metadata entry too long", key);
    memcpy(value, at, n);
    value[n] = 0;
    return value;
}

/* Where tensor `name`'s bytes start, its dtype and element count (exit if absent or bad). */
static const void *tensor(const char *name, const char *want, size_t *count) {
    char key[300];
    snprintf(key, sizeof key, "\"%s\":{", name);
    const char *at = strstr(header, key);
    if (!at) fail("no tensor", name);
    char dtype[8] = {0};
    long begin = -1, end = -1;
    const char *d = strstr(at, "\"dtype\":\""), *o = strstr(at, "\"data_offsets\":[");
    if (!d || !o || sscanf(d + 9, "%7[^\"]", dtype) != 1 ||
        sscanf(o + 16, "%ld,%ld", &begin, &end) != 2)
        fail("unreadable header entry", name);
    if (strcmp(dtype, want) != 0) fail("unexpected dtype of tensor", name);
    int size = strcmp(dtype, "BF16") == 0 ? 2 : strcmp(dtype, "F32") == 0 ? 4 : 8;
    if (begin < 0 || end < begin || (size_t)end > data_size) fail("data offsets out of range", name);
    *count = (size_t)(end - begin) / size;
    return data + begin;
}

static float bf16_to_float(uint16_t bits) {  /* bfloat16 is the top half of a float32 */
    uint32_t word = (uint32_t)bits << 16;
    float value;
    memcpy(&value, &word, sizeof value);
    return value;
}

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: %s FILE GROUP/WINDOW/DTYPE\n", argv[0]); return 2; }
    FILE *file = fopen(argv[1], "rb");
    if (!file) { perror(argv[1]); return 2; }
    uint64_t length;  /* little-endian, as on x86 and ARM */
    if (fread(&length, 8, 1, file) != 1) fail("not a safetensors file", argv[1]);
    fseek(file, 0, SEEK_END);
    long total = ftell(file);
    if (total < 8 || length > (uint64_t)(total - 8)) fail("header length past the end", argv[1]);
    fseek(file, 8, SEEK_SET);
    header = calloc(length + 1, 1);
    data_size = (size_t)(total - 8 - (long)length);
    data = malloc(data_size ? data_size : 1);
    if (!header || !data || fread(header, 1, length, file) != length ||
        fread(data, 1, data_size, file) != data_size) fail("cannot read", argv[1]);
    fclose(file);

    /* The RoPE, from the flat metadata: the group is the case name up to its first '/'. */
    char group[200], key[300], value[64], dtype[8];
    snprintf(group, sizeof group, "%.*s", (int)strcspn(argv[2], "/"), argv[2]);
    snprintf(key, sizeof key, "%s/base", group);
    const double base = atof(entry(key, value, sizeof value));
    snprintf(key, sizeof key, "%s/head_dim", group);
    const int head_dim = atoi(entry(key, value, sizeof value));
    snprintf(key, sizeof key, "%s/rotary_dim", group);
    const int rotary_dim = atoi(entry(key, value, sizeof value));
    snprintf(key, sizeof key, "%s/layout", group);
    const int half = strcmp(entry(key, value, sizeof value), "half") == 0;
    snprintf(key, sizeof key, "%s/dtype", argv[2]);
    entry(key, dtype, sizeof dtype);
    if (head_dim <= 0 || rotary_dim <= 0 || rotary_dim > head_dim || rotary_dim % 2)
        fail("bad widths in the metadata of", group);

    char name[300];
    size_t n_q, n_pos, n_expected, n_tol;
    snprintf(name, sizeof name, "%s/q", argv[2]);
    const void *q = tensor(name, dtype, &n_q);
    snprintf(name, sizeof name, "%s/positions", argv[2]);
    const int64_t *positions = tensor(name, "I64", &n_pos);
    snprintf(name, sizeof name, "%s/q_rot", argv[2]);
    const double *expected = tensor(name, "F64", &n_expected);
    snprintf(name, sizeof name, "%s/tol_q", argv[2]);
    const double *tol = tensor(name, "F64", &n_tol);
    if (n_pos == 0 || n_q % ((size_t)head_dim * n_pos) || n_expected != n_q || n_tol != n_q)
        fail("sizes do not fit one position row of", argv[2]);

    const int pairs = rotary_dim / 2;
    const int bf16 = strcmp(dtype, "BF16") == 0;
    size_t within = 0;
    double worst = 0.0;
    float *x = malloc(sizeof(float) * head_dim), *y = malloc(sizeof(float) * head_dim);
    for (size_t row = 0; row < n_q / head_dim; row++) {  /* (batch, heads, seq) rows */
        for (int j = 0; j < head_dim; j++) {
            size_t at = row * head_dim + j;
            x[j] = bf16 ? bf16_to_float(((const uint16_t *)q)[at]) : ((const float *)q)[at];
            y[j] = x[j];  /* coordinates past rotary_dim are copied */
        }
        const float m = (float)positions[row % n_pos];
        for (int i = 0; i < pairs; i++) {  /* angles formed in float32, as most engines do */
            const float inv_freq = (float)pow(base, -2.0 * i / rotary_dim);
            const float angle = m * inv_freq, c = cosf(angle), s = sinf(angle);
            const int a = half ? i : 2 * i, b = half ? i + pairs : 2 * i + 1;
            y[a] = x[a] * c - x[b] * s;
            y[b] = x[a] * s + x[b] * c;
        }
        for (int j = 0; j < head_dim; j++) {
            size_t at = row * head_dim + j;
            double ratio = fabs((double)y[j] - expected[at]) / tol[at];
            within += ratio <= 1.0;
            if (ratio > worst) worst = ratio;
        }
    }
    printf("%s: %zu of %zu elements within tolerance, largest error/tolerance %.3g "
           "(base %g, %s layout, rotary_dim %d of %d, %s input)\n",
           argv[2], within, n_q, worst, base, half ? "half" : "interleaved", rotary_dim,
           head_dim, dtype);
    return within == n_q ? 0 : 1;
}
