/* Check a RoPE written in C against posenc_ref's reference vectors (.safetensors).
 *
 *   cc -O2 -o read_vectors read_vectors.c -lm
 *   ./read_vectors vectors.safetensors rope/far/float32 half
 *
 * It reads one case (q in float32, positions, the expected q_rot and its per-element
 * tolerance tol_q, float64), rotates q with its own float32 RoPE (base and width given below,
 * angles formed in float32 as most engines do) and counts the elements within tolerance.
 * The safetensors header is JSON; a few strstr calls find what is needed. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *header;   /* the JSON header */
static uint8_t *data;  /* the bytes after it */

/* Where tensor `name`'s bytes start, and its element count (exit if absent). */
static void *tensor(const char *name, size_t *count) {
    char key[256];
    snprintf(key, sizeof key, "\"%s\":{", name);
    char *at = strstr(header, key);
    if (!at) { fprintf(stderr, "no tensor %s\n", name); exit(2); }
    long begin, end;
    sscanf(strstr(at, "\"data_offsets\":[") + 16, "%ld,%ld", &begin, &end);
    char dtype[8] = {0};
    sscanf(strstr(at, "\"dtype\":\"") + 9, "%7[^\"]", dtype);
    int size = strcmp(dtype, "F32") == 0 ? 4 : strcmp(dtype, "BF16") == 0 ? 2 : 8;
    *count = (size_t)(end - begin) / size;
    return data + begin;
}

int main(int argc, char **argv) {
    if (argc != 4) { fprintf(stderr, "usage: %s FILE CASE half|interleaved\n", argv[0]); return 2; }
    FILE *file = fopen(argv[1], "rb");
    if (!file) { perror(argv[1]); return 2; }
    uint64_t length;
    if (fread(&length, 8, 1, file) != 1) return 2;  /* little-endian, as on x86 and ARM */
    header = calloc(length + 1, 1);
    if (fread(header, 1, length, file) != length) return 2;
    long start = ftell(file);
    fseek(file, 0, SEEK_END);
    long size = ftell(file) - start;
    fseek(file, start, SEEK_SET);
    data = malloc(size);
    if (fread(data, 1, size, file) != (size_t)size) return 2;
    fclose(file);

    char name[256];
    size_t n_q, n_pos, n_expected, n_tol;
    snprintf(name, sizeof name, "%s/q", argv[2]);
    const float *q = tensor(name, &n_q);
    snprintf(name, sizeof name, "%s/positions", argv[2]);
    const int64_t *positions = tensor(name, &n_pos);
    snprintf(name, sizeof name, "%s/q_rot", argv[2]);
    const double *expected = tensor(name, &n_expected);
    snprintf(name, sizeof name, "%s/tol_q", argv[2]);
    const double *tol = tensor(name, &n_tol);

    /* This example's model: base 500000, the whole head rotated (Llama 3 8B, no scaling). */
    const double base = 500000.0;
    const int head_dim = (int)(n_q / n_pos), pairs = head_dim / 2;
    const int half = strcmp(argv[3], "half") == 0;
    size_t within = 0;
    double worst = 0.0;
    for (size_t row = 0; row < n_q / head_dim; row++) {  /* (batch, heads, seq) rows */
        const float *x = q + row * head_dim;
        const float m = (float)positions[row % n_pos];
        for (int i = 0; i < pairs; i++) {
            const float inv_freq = (float)pow(base, -2.0 * i / head_dim);
            const float angle = m * inv_freq, c = cosf(angle), s = sinf(angle);
            const int a = half ? i : 2 * i, b = half ? i + pairs : 2 * i + 1;
            const float y[2] = {x[a] * c - x[b] * s, x[a] * s + x[b] * c};
            const int index[2] = {a, b};
            for (int t = 0; t < 2; t++) {
                size_t j = row * head_dim + index[t];
                double ratio = fabs(y[t] - expected[j]) / tol[j];
                within += ratio <= 1.0;
                if (ratio > worst) worst = ratio;
            }
        }
    }
    printf("%s: %zu of %zu elements within tolerance, largest error/tolerance %.3g\n",
           argv[2], within, n_q, worst);
    return within == n_q ? 0 : 1;
}
