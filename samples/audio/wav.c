/*
 * wav.c - the WAV writer (see wav.h). The header is 44 bytes:
 *   "RIFF" <36 + data bytes> "WAVE"
 *   "fmt " <16> <1 = PCM> <channels> <rate> <rate * align> <align> <16>
 *   "data" <frames * align>
 * with align = channels * 2 bytes; every field little-endian.
 */
#include "wav.h"

#include <errno.h>
#include <math.h>
#include <string.h>

static void le16(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v & 0xff);
    p[1] = (unsigned char)(v >> 8 & 0xff);
}

static void le32(unsigned char *p, uint32_t v)
{
    le16(p, v & 0xffff);
    le16(p + 2, v >> 16);
}

int wav_open(wav_writer *w, const char *path, int channels, uint32_t rate, size_t frames)
{
    const uint32_t align = (uint32_t)channels * 2;
    if (w == NULL || path == NULL || channels < 1 || channels > 2 || rate == 0 ||
        frames > (UINT32_MAX - 36) / align) {
        errno = EINVAL;
        return -1;
    }
    unsigned char h[44];
    const uint32_t data = (uint32_t)frames * align;
    memcpy(h, "RIFF", 4);
    le32(h + 4, 36 + data);
    memcpy(h + 8, "WAVEfmt ", 8);
    le32(h + 16, 16);
    le16(h + 20, 1);
    le16(h + 22, (uint32_t)channels);
    le32(h + 24, rate);
    le32(h + 28, rate * align);
    le16(h + 32, align);
    le16(h + 34, 16);
    memcpy(h + 36, "data", 4);
    le32(h + 40, data);
    FILE *f = fopen(path, "wb");
    if (f == NULL)
        return -1;
    if (fwrite(h, 1, sizeof h, f) != sizeof h) {
        int e = errno;
        fclose(f);
        errno = e != 0 ? e : EIO;
        return -1;
    }
    *w = (wav_writer){f, channels, frames, 0};
    return 0;
}

int wav_write(wav_writer *w, const double *samples, size_t n)
{
    if (n > w->frames - w->written) {
        errno = EINVAL;
        return -1;
    }
    unsigned char buf[4096];
    size_t total = n * (size_t)w->channels, used = 0;
    for (size_t i = 0; i < total; i++) {
        double x = samples[i];
        x = x > 1.0 ? 1.0 : x < -1.0 ? -1.0 : x;
        long v = lrint(x * 32767.0);
        le16(buf + used, (uint32_t)(v & 0xffff));
        used += 2;
        if (used == sizeof buf || i + 1 == total) {
            if (fwrite(buf, 1, used, w->f) != used) {
                if (errno == 0)
                    errno = EIO;
                return -1;
            }
            used = 0;
        }
    }
    w->written += n;
    return 0;
}

int wav_close(wav_writer *w)
{
    int complete = w->written == w->frames;
    int rc = fclose(w->f);
    w->f = NULL;
    if (rc != 0)
        return -1;
    if (!complete) {
        errno = EINVAL;
        return -1;
    }
    return 0;
}
