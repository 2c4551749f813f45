/*
 * wav.h - a minimal WAV writer for the audio samples: RIFF/WAVE, one "fmt "
 * chunk (PCM, 16 bits) and one "data" chunk, little-endian whatever the host,
 * sizes known up front so the file is written in one pass, block by block.
 */
#ifndef SAMPLES_AUDIO_WAV_H
#define SAMPLES_AUDIO_WAV_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct wav_writer {
    FILE *f;
    int channels;
    size_t frames;   /* announced in the header */
    size_t written;  /* frames written so far */
} wav_writer;

/* Creates path and writes the 44-byte header of a 16-bit PCM file of
 * `frames` frames. Returns 0, or -1 with errno (fopen's; EINVAL for
 * channels outside 1..2, rate 0, or a data size over 4 GiB). */
int wav_open(wav_writer *w, const char *path, int channels, uint32_t rate, size_t frames);

/* Writes n frames of interleaved samples in [-1, 1] (clipped beyond),
 * rounded to 16 bits. Returns 0, or -1 with errno (EINVAL: more frames than
 * announced; fwrite's errno). */
int wav_write(wav_writer *w, const double *samples, size_t n);

/* Closes the file. Returns 0, or -1 with errno: EINVAL if fewer frames were
 * written than announced (the file is then invalid), or fclose's. */
int wav_close(wav_writer *w);

#endif
