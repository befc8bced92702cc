/* accv: Intel AMX + AVX-512 intrinsics emulated in portable C (C99 + <math.h>, <fenv.h>-free).
 *
 * The C units of compilers/targets/amx/emit_c.py include <immintrin.h>; the emulated build replaces exactly
 * that line with this header, so the same source compiles with plain `gcc -O2 -ffp-contract=off`
 * on any host and runs the program on the state below instead of the CPU's tiles and zmm
 * registers.
 *
 * Semantics follow the Intel SDM pseudocode as summarized in ../shared/reference/amx.md:
 *  - LDTILECFG (_tile_loadconfig): palette 0 releases; palette 1 takes rows <= 16 and colsb <= 64
 *    per tile (rows and colsb both zero or both non-zero) with the reserved bytes zero; anything
 *    else is #GP. Every tile is zeroed. Without arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)
 *    the first tile instruction faults (Linux delivers SIGILL).
 *  - TILELOADD / TILESTORED: rows x colsb bytes at base + r * stride (start_row honoured), bytes
 *    past colsb and rows past rows zeroed on a load; colsb not a multiple of 4 is #UD (found on a
 *    Sapphire Rapids host: colsb 1-3, 5-7, 9-11, 63 raise SIGILL; LDTILECFG and TILEZERO accept it).
 *  - TDPB[SU][SU]D: C[m][n] (s32, wrapping) += sum_k sum_{i<4} A[m][4k+i] * B[k][4n+i]; the shape
 *    checks (C.rows == A.rows, C.colsb == B.colsb, A.colsb / 4 == B.rows, colsb % 4 == 0, three
 *    distinct valid tiles) are #UD.
 *  - TDPBF16PS: per (m, n) an even and an odd f32 FMA chain over k from +0.0 (bf16 inputs widened,
 *    denormals read as zero, tiny results flushed, round to nearest even, MXCSR ignored), then
 *    even + odd, then C + that.
 *  - #UD is delivered as SIGILL and #GP as SIGSEGV, the signals Linux gives a process for them,
 *    after one line on stderr naming the instruction and the check.
 *  - AVX-512 float lanes: operands read through MXCSR.DAZ, results flushed through MXCSR.FTZ when
 *    the exact result's magnitude is below 2^-126 (tininess before rounding, as the functional
 *    simulator's f32 environment), round to nearest even. A rounding mode other than nearest is
 *    not emulated (the emulation stops with SIGABRT); MXCSR reserved bits are #GP.
 *  - NaN: the x86 rule (the first source's NaN quieted, else the second's; an invalid operation
 *    gives the default NaN 0xFFC00000; VMAXPS / VMINPS return the second source as is);
 *    TDPBF16PS's invalid operations give 0x7FC00000 as the hardware does. Which NaN the hardware's
 *    FMA returns for several NaN operands depends on the form gcc picks: here the first NaN of
 *    (a, b, c) of _mm512_fmadd_ps(a, b, c).
 *
 * f32 arithmetic is computed in double: exact for + and * of f32 values, and the one rounding to
 * f32 is then correct (53 >= 2 * 24 + 2); the FMA sum is rounded to odd in double before its
 * rounding to f32. The build must not contract a * b + c (-ffp-contract=off).
 */
#ifndef ACCV_AMX_EMULATION_H
#define ACCV_AMX_EMULATION_H

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>

#ifndef SYS_arch_prctl
#define SYS_arch_prctl 158 /* x86-64's number; on other hosts only this emulation handles it */
#endif

/* ------------------------------------------------------------------------------------------ */
/* types                                                                                        */
/* ------------------------------------------------------------------------------------------ */

typedef union { uint8_t u8[64]; int8_t i8[64]; uint32_t u32[16]; int32_t i32[16]; float f32[16]; } accv_v512;
typedef union { uint8_t u8[16]; uint32_t u32[4]; float f32[4]; } accv_v128;
/* distinct types, so that the emitter mixing them up fails here as it fails with <immintrin.h> */
typedef struct { accv_v512 v; } __m512i;
typedef struct { accv_v512 v; } __m512;
typedef struct { accv_v128 v; } __m128i;
typedef struct { accv_v128 v; } __m128;
typedef uint64_t __mmask64;
typedef uint16_t __mmask16;

/* ------------------------------------------------------------------------------------------ */
/* faults                                                                                       */
/* ------------------------------------------------------------------------------------------ */

static void accv_emu_fault(int sig, const char *what, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 3, 4)));

static void accv_emu_fault(int sig, const char *what, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "accv-emulation: %s: ", what);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    raise(sig);
    abort(); /* the signal was blocked or ignored */
}

#define ACCV_UD(...) accv_emu_fault(SIGILL, "#UD", __VA_ARGS__)
#define ACCV_GP(...) accv_emu_fault(SIGSEGV, "#GP", __VA_ARGS__)

/* ------------------------------------------------------------------------------------------ */
/* the Linux tile-data permission (arch_prctl)                                                  */
/* ------------------------------------------------------------------------------------------ */

static int accv_emu_xtile_perm;

static long accv_emu_syscall(long n, ...)
{
    va_list ap;
    long code, arg;
    if (n != SYS_arch_prctl) {
        errno = ENOSYS;
        return -1;
    }
    va_start(ap, n);
    code = va_arg(ap, long);
    arg = va_arg(ap, long);
    va_end(ap);
    if ((code & 0xffffffffL) == 0x1023 /* ARCH_REQ_XCOMP_PERM */ && (arg & 0xffffffffL) == 18) {
        accv_emu_xtile_perm = 1;
        return 0;
    }
    errno = EINVAL;
    return -1;
}
#define syscall accv_emu_syscall

/* ------------------------------------------------------------------------------------------ */
/* MXCSR                                                                                        */
/* ------------------------------------------------------------------------------------------ */

#define ACCV_MXCSR_DAZ 0x0040u
#define ACCV_MXCSR_FTZ 0x8000u
#define ACCV_MXCSR_RC 0x6000u
static unsigned int accv_emu_mxcsr = 0x1F80u; /* the power-on value: exceptions masked, RNE */

static inline unsigned int _mm_getcsr(void) { return accv_emu_mxcsr; }

static inline void _mm_setcsr(unsigned int v)
{
    if (v & 0xFFFF0000u)
        ACCV_GP("LDMXCSR 0x%08x sets reserved bits", v);
    accv_emu_mxcsr = v;
}

static inline void accv_emu_need_rne(const char *what)
{
    if (accv_emu_mxcsr & ACCV_MXCSR_RC) {
        fprintf(stderr, "accv-emulation: %s: MXCSR.RC = %u is not emulated (round to nearest only)\n", what,
                (accv_emu_mxcsr & ACCV_MXCSR_RC) >> 13);
        fflush(stderr);
        abort();
    }
}

/* ------------------------------------------------------------------------------------------ */
/* f32 helpers                                                                                  */
/* ------------------------------------------------------------------------------------------ */

static inline uint32_t accv_f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float accv_u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline int accv_isnan(float f) { uint32_t u = accv_f2u(f); return (u & 0x7F800000u) == 0x7F800000u && (u & 0x7FFFFFu); }
static inline float accv_quiet(float f) { return accv_u2f(accv_f2u(f) | 0x00400000u); }

static inline float accv_daz_always(float f)
{
    uint32_t u = accv_f2u(f);
    return (u & 0x7F800000u) == 0 ? accv_u2f(u & 0x80000000u) : f;
}

static inline float accv_daz(float f) { return (accv_emu_mxcsr & ACCV_MXCSR_DAZ) ? accv_daz_always(f) : f; }

/* the f32 result of a double holding the exact (or innocuously rounded) value: FTZ when asked */
static inline float accv_round(double r, int ftz)
{
    if (ftz && r != 0.0 && fabs(r) < 0x1p-126)
        return r < 0 ? -0.0f : 0.0f;
    return (float)r;
}

static inline float accv_ftz_result(double r) { return accv_round(r, (accv_emu_mxcsr & ACCV_MXCSR_FTZ) != 0); }

#define ACCV_DEFAULT_NAN 0xFFC00000u

static inline float accv_add(float a, float b)
{
    if (accv_isnan(a)) return accv_quiet(a);
    if (accv_isnan(b)) return accv_quiet(b);
    a = accv_daz(a);
    b = accv_daz(b);
    {
        double r = (double)a + (double)b;
        if (r != r) return accv_u2f(ACCV_DEFAULT_NAN);
        return accv_ftz_result(r);
    }
}

static inline float accv_mul(float a, float b)
{
    if (accv_isnan(a)) return accv_quiet(a);
    if (accv_isnan(b)) return accv_quiet(b);
    a = accv_daz(a);
    b = accv_daz(b);
    {
        double r = (double)a * (double)b;
        if (r != r) return accv_u2f(ACCV_DEFAULT_NAN);
        return accv_ftz_result(r);
    }
}

/* a * b + c rounded once: the product is exact in double, the sum rounded to odd, then to f32 */
static inline float accv_fma_core(float a, float b, float c, int ftz, uint32_t invalid_nan)
{
    double p = (double)a * (double)b, cd = (double)c, s, bb, e;
    uint64_t bits;
    s = p + cd;
    if (s != s) return accv_u2f(invalid_nan);
    bb = s - p;
    e = (p - (s - bb)) + (cd - bb);
    memcpy(&bits, &s, 8);
    if (e != 0.0 && isfinite(s) && (bits & 1) == 0) {
        bits += (signbit(e) != 0) == (signbit(s) != 0) ? 1 : (uint64_t)-1;
        memcpy(&s, &bits, 8);
    }
    return accv_round(s, ftz);
}

static inline float accv_fma(float a, float b, float c)
{
    if (accv_isnan(a)) return accv_quiet(a);
    if (accv_isnan(b)) return accv_quiet(b);
    if (accv_isnan(c)) return accv_quiet(c);
    return accv_fma_core(accv_daz(a), accv_daz(b), accv_daz(c), (accv_emu_mxcsr & ACCV_MXCSR_FTZ) != 0,
                         ACCV_DEFAULT_NAN);
}

/* MAXPS / MINPS: dst = (src1 > src2) ? src1 : src2 after DAZ; NaN or equal -> src2 */
static inline float accv_max(float a, float b)
{
    float x = accv_daz(a), y = accv_daz(b);
    return x > y ? x : y;
}

static inline float accv_min(float a, float b)
{
    float x = accv_daz(a), y = accv_daz(b);
    return x < y ? x : y;
}

/* CVT(T)PS2DQ: NaN and values outside [-2^31, 2^31) after rounding -> 0x80000000 */
static inline int32_t accv_cvt(float f, int truncate)
{
    double r;
    if (accv_isnan(f)) return INT32_MIN;
    r = truncate ? trunc((double)f) : nearbyint((double)f);
    if (r >= -2147483648.0 && r < 2147483648.0) return (int32_t)r;
    return INT32_MIN;
}

/* ------------------------------------------------------------------------------------------ */
/* AVX-512 (and the SSE pieces the emitter uses)                                                */
/* ------------------------------------------------------------------------------------------ */

/* the intrinsics are kept out of line: a unit of a few hundred instructions then compiles about
 * twice as fast, and a run's time is spent in the tile loops anyway */
#define ACCV_OP static __attribute__((noinline, unused))

#define ACCV_LANES(T, ...)              \
    do {                                \
        int i_;                         \
        for (i_ = 0; i_ < (T); i_++) {  \
            __VA_ARGS__;                \
        }                               \
    } while (0)

ACCV_OP __m512i _mm512_setzero_si512(void) { __m512i r; memset(&r, 0, sizeof r); return r; }
ACCV_OP __m512 _mm512_castsi512_ps(__m512i x) { __m512 r; r.v = x.v; return r; }
ACCV_OP __m512i _mm512_castps_si512(__m512 x) { __m512i r; r.v = x.v; return r; }

ACCV_OP __m512 _mm512_loadu_ps(void const *p) { __m512 r; memcpy(r.v.u8, p, 64); return r; }
ACCV_OP void _mm512_storeu_ps(void *p, __m512 x) { memcpy(p, x.v.u8, 64); }
ACCV_OP __m512i _mm512_loadu_si512(void const *p) { __m512i r; memcpy(r.v.u8, p, 64); return r; }
ACCV_OP void _mm512_storeu_si512(void *p, __m512i x) { memcpy(p, x.v.u8, 64); }

ACCV_OP __m128 _mm_load_ss(float const *p)
{
    __m128 r;
    memset(&r, 0, sizeof r);
    memcpy(r.v.u8, p, 4);
    return r;
}

ACCV_OP __m512 _mm512_broadcastss_ps(__m128 x)
{
    __m512 r;
    ACCV_LANES(16, r.v.u32[i_] = x.v.u32[0]);
    return r;
}

ACCV_OP __m512i _mm512_xor_epi32(__m512i a, __m512i b) { __m512i r; ACCV_LANES(16, r.v.u32[i_] = a.v.u32[i_] ^ b.v.u32[i_]); return r; }
ACCV_OP __m512i _mm512_and_epi32(__m512i a, __m512i b) { __m512i r; ACCV_LANES(16, r.v.u32[i_] = a.v.u32[i_] & b.v.u32[i_]); return r; }

#define ACCV_PS2(name, fn, what)                                           \
    ACCV_OP __m512 name(__m512 a, __m512 b)                          \
    {                                                                      \
        __m512 r;                                                          \
        accv_emu_need_rne(what);                                           \
        ACCV_LANES(16, r.v.f32[i_] = fn(a.v.f32[i_], b.v.f32[i_]));        \
        return r;                                                          \
    }
ACCV_PS2(_mm512_add_ps, accv_add, "VADDPS")
ACCV_PS2(_mm512_mul_ps, accv_mul, "VMULPS")
ACCV_PS2(_mm512_max_ps, accv_max, "VMAXPS")
ACCV_PS2(_mm512_min_ps, accv_min, "VMINPS")

ACCV_OP __m512 _mm512_fmadd_ps(__m512 a, __m512 b, __m512 c)
{
    __m512 r;
    accv_emu_need_rne("VFMADD231PS");
    ACCV_LANES(16, r.v.f32[i_] = accv_fma(a.v.f32[i_], b.v.f32[i_], c.v.f32[i_]));
    return r;
}

ACCV_OP __m512 _mm512_cvtepi32_ps(__m512i x)
{
    __m512 r;
    accv_emu_need_rne("VCVTDQ2PS");
    ACCV_LANES(16, r.v.f32[i_] = (float)x.v.i32[i_]); /* C's int -> float conversion rounds to nearest even */
    return r;
}

ACCV_OP __m512i _mm512_cvtps_epi32(__m512 x)
{
    __m512i r;
    accv_emu_need_rne("VCVTPS2DQ");
    ACCV_LANES(16, r.v.i32[i_] = accv_cvt(x.v.f32[i_], 0));
    return r;
}

ACCV_OP __m512i _mm512_cvttps_epi32(__m512 x)
{
    __m512i r;
    ACCV_LANES(16, r.v.i32[i_] = accv_cvt(x.v.f32[i_], 1));
    return r;
}

/* VPMOVUSDB: u32 lanes -> u8 with unsigned saturation */
ACCV_OP __m128i _mm512_cvtusepi32_epi8(__m512i x)
{
    __m128i r;
    ACCV_LANES(16, r.v.u8[i_] = x.v.u32[i_] > 255u ? 255u : (uint8_t)x.v.u32[i_]);
    return r;
}

/* VPMOVDB: each u32 lane's low byte (truncation) */
ACCV_OP __m128i _mm512_cvtepi32_epi8(__m512i x)
{
    __m128i r;
    ACCV_LANES(16, r.v.u8[i_] = (uint8_t)x.v.u32[i_]);
    return r;
}

ACCV_OP void _mm512_mask_cvtusepi32_storeu_epi8(void *p, __mmask16 k, __m512i x)
{
    __m128i s = _mm512_cvtusepi32_epi8(x);
    ACCV_LANES(16, if ((k >> i_) & 1u) ((uint8_t *)p)[i_] = s.v.u8[i_]);
}

ACCV_OP __m512i _mm512_zextsi128_si512(__m128i x)
{
    __m512i r = _mm512_setzero_si512();
    memcpy(r.v.u8, x.v.u8, 16);
    return r;
}

/* masked byte moves: masked-off bytes are neither read nor written (fault suppression) */
ACCV_OP __m512i _mm512_maskz_loadu_epi8(__mmask64 k, void const *p)
{
    __m512i r;
    ACCV_LANES(64, r.v.u8[i_] = ((k >> i_) & 1u) ? ((const uint8_t *)p)[i_] : 0);
    return r;
}

ACCV_OP void _mm512_mask_storeu_epi8(void *p, __mmask64 k, __m512i x)
{
    ACCV_LANES(64, if ((k >> i_) & 1u) ((uint8_t *)p)[i_] = x.v.u8[i_]);
}

/* lane-wise integer ops; wrapping arithmetic on unsigned lanes (no signed overflow in C) */
#define ACCV_INT2(name, N, T, lane, expr)                                  \
    ACCV_OP __m512i name(__m512i a, __m512i b)                       \
    {                                                                      \
        __m512i r;                                                         \
        ACCV_LANES(N, { T x_ = a.v.lane[i_], y_ = b.v.lane[i_]; r.v.lane[i_] = (T)(expr); }); \
        return r;                                                          \
    }
ACCV_INT2(_mm512_add_epi32, 16, uint32_t, u32, x_ + y_)
ACCV_INT2(_mm512_sub_epi32, 16, uint32_t, u32, x_ - y_)
ACCV_INT2(_mm512_mullo_epi32, 16, uint32_t, u32, x_ * y_)
ACCV_INT2(_mm512_min_epi32, 16, int32_t, i32, x_ < y_ ? x_ : y_)
ACCV_INT2(_mm512_max_epi32, 16, int32_t, i32, x_ > y_ ? x_ : y_)
ACCV_INT2(_mm512_add_epi8, 64, uint8_t, u8, x_ + y_)
ACCV_INT2(_mm512_sub_epi8, 64, uint8_t, u8, x_ - y_)
ACCV_INT2(_mm512_min_epi8, 64, int8_t, i8, x_ < y_ ? x_ : y_)
ACCV_INT2(_mm512_max_epi8, 64, int8_t, i8, x_ > y_ ? x_ : y_)
ACCV_INT2(_mm512_min_epu8, 64, uint8_t, u8, x_ < y_ ? x_ : y_)
ACCV_INT2(_mm512_max_epu8, 64, uint8_t, u8, x_ > y_ ? x_ : y_)
ACCV_INT2(_mm512_adds_epi8, 64, int8_t, i8, x_ + y_ > 127 ? 127 : x_ + y_ < -128 ? -128 : x_ + y_)

/* VPERMT2B (AVX512_VBMI): byte i is byte idx[i] & 127 of a ++ b */
ACCV_OP __m512i _mm512_permutex2var_epi8(__m512i a, __m512i idx, __m512i b)
{
    __m512i r;
    ACCV_LANES(64, { unsigned j_ = idx.v.u8[i_] & 127u; r.v.u8[i_] = j_ < 64 ? a.v.u8[j_] : b.v.u8[j_ - 64]; });
    return r;
}

/* ------------------------------------------------------------------------------------------ */
/* AMX                                                                                          */
/* ------------------------------------------------------------------------------------------ */

static struct {
    int configured;          /* palette 1 loaded */
    unsigned start_row;
    uint16_t colsb[8];
    uint8_t rows[8];
    uint8_t t[8][16][64];
} accv_emu_amx;

static inline void accv_emu_tile_permitted(const char *what)
{
    if (!accv_emu_xtile_perm) /* Linux: #NM on the first use without XTILEDATA permission -> SIGILL */
        accv_emu_fault(SIGILL, what, "no arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) permission");
}

ACCV_OP void _tile_release(void)
{
    accv_emu_tile_permitted("TILERELEASE");
    memset(&accv_emu_amx, 0, sizeof accv_emu_amx);
}

ACCV_OP void _tile_loadconfig(const void *config)
{
    const uint8_t *c = (const uint8_t *)config;
    int i;
    accv_emu_tile_permitted("LDTILECFG");
    if (c[0] == 0) {
        memset(&accv_emu_amx, 0, sizeof accv_emu_amx);
        return;
    }
    if (c[0] != 1)
        ACCV_GP("LDTILECFG: palette %u does not exist", c[0]);
    for (i = 2; i < 16; i++)
        if (c[i]) ACCV_GP("LDTILECFG: reserved byte %d is %u", i, c[i]);
    for (i = 32; i < 48; i++)
        if (c[i]) ACCV_GP("LDTILECFG: colsb byte %d of a tile palette 1 lacks is %u", i, c[i]);
    for (i = 56; i < 64; i++)
        if (c[i]) ACCV_GP("LDTILECFG: rows byte %d of a tile palette 1 lacks is %u", i, c[i]);
    memset(&accv_emu_amx, 0, sizeof accv_emu_amx);
    for (i = 0; i < 8; i++) {
        unsigned colsb = c[16 + 2 * i] | (unsigned)c[17 + 2 * i] << 8, rows = c[48 + i];
        if (rows > 16 || colsb > 64)
            ACCV_GP("LDTILECFG: tmm%d of %u rows x %u bytes exceeds 16 x 64", i, rows, colsb);
        if ((rows == 0) != (colsb == 0))
            ACCV_GP("LDTILECFG: tmm%d has %u rows and %u bytes per row", i, rows, colsb);
        accv_emu_amx.rows[i] = (uint8_t)rows;
        accv_emu_amx.colsb[i] = (uint16_t)colsb;
    }
    accv_emu_amx.start_row = c[1];
    accv_emu_amx.configured = 1;
}

static inline void accv_emu_tile_valid(const char *what, int t)
{
    accv_emu_tile_permitted(what);
    if (!accv_emu_amx.configured)
        ACCV_UD("%s tmm%d: no tile configuration loaded", what, t);
    if (t < 0 || t > 7 || accv_emu_amx.rows[t] == 0)
        ACCV_UD("%s tmm%d: the tile is not configured", what, t);
}

static inline void accv_emu_tile_zero_row_from(int t, unsigned r)
{
    for (; r < 16; r++)
        memset(accv_emu_amx.t[t][r], 0, 64);
}

ACCV_OP void accv_tile_loadd(int t, const void *base, long stride)
{
    unsigned r, rows, colsb;
    accv_emu_tile_valid("TILELOADD", t);
    rows = accv_emu_amx.rows[t];
    colsb = accv_emu_amx.colsb[t];
    if (colsb % 4)
        ACCV_UD("TILELOADD tmm%d: colsb %u is not a multiple of 4", t, colsb);
    for (r = accv_emu_amx.start_row; r < rows; r++) {
        memcpy(accv_emu_amx.t[t][r], (const uint8_t *)base + (long)r * stride, colsb);
        memset(accv_emu_amx.t[t][r] + colsb, 0, 64 - colsb);
    }
    accv_emu_tile_zero_row_from(t, rows);
    accv_emu_amx.start_row = 0;
}

ACCV_OP void accv_tile_stored(int t, void *base, long stride)
{
    unsigned r, rows, colsb;
    accv_emu_tile_valid("TILESTORED", t);
    rows = accv_emu_amx.rows[t];
    colsb = accv_emu_amx.colsb[t];
    if (colsb % 4)
        ACCV_UD("TILESTORED tmm%d: colsb %u is not a multiple of 4", t, colsb);
    for (r = accv_emu_amx.start_row; r < rows; r++)
        memcpy((uint8_t *)base + (long)r * stride, accv_emu_amx.t[t][r], colsb);
    accv_emu_amx.start_row = 0;
}

ACCV_OP void accv_tile_zero(int t)
{
    accv_emu_tile_valid("TILEZERO", t);
    memset(accv_emu_amx.t[t], 0, sizeof accv_emu_amx.t[t]);
}

/* the shape checks of TDPB*D / TDPBF16PS; returns (m, k, n) through the pointers */
static inline void accv_emu_tmul_shape(const char *what, int c, int a, int b, unsigned *m, unsigned *k, unsigned *n)
{
    accv_emu_tile_valid(what, c);
    accv_emu_tile_valid(what, a);
    accv_emu_tile_valid(what, b);
    if (c == a || c == b || a == b)
        ACCV_UD("%s tmm%d, tmm%d, tmm%d: the tiles are not distinct", what, c, a, b);
    if (accv_emu_amx.colsb[c] % 4 || accv_emu_amx.colsb[a] % 4 || accv_emu_amx.colsb[b] % 4)
        ACCV_UD("%s tmm%d, tmm%d, tmm%d: a colsb is not a multiple of 4", what, c, a, b);
    if (accv_emu_amx.rows[c] != accv_emu_amx.rows[a])
        ACCV_UD("%s: rows of tmm%d (%u) != rows of tmm%d (%u)", what, c, accv_emu_amx.rows[c], a, accv_emu_amx.rows[a]);
    if (accv_emu_amx.colsb[c] != accv_emu_amx.colsb[b])
        ACCV_UD("%s: colsb of tmm%d (%u) != colsb of tmm%d (%u)", what, c, accv_emu_amx.colsb[c], b,
                accv_emu_amx.colsb[b]);
    if (accv_emu_amx.colsb[a] / 4 != accv_emu_amx.rows[b])
        ACCV_UD("%s: colsb of tmm%d (%u) / 4 != rows of tmm%d (%u)", what, a, accv_emu_amx.colsb[a], b,
                accv_emu_amx.rows[b]);
    *m = accv_emu_amx.rows[c];
    *k = accv_emu_amx.colsb[a] / 4;
    *n = accv_emu_amx.colsb[c] / 4;
}

static inline int32_t accv_tile_s32(int t, unsigned r, unsigned j)
{
    int32_t v;
    memcpy(&v, &accv_emu_amx.t[t][r][4 * j], 4);
    return v;
}

/* sa, sb: whether A's / B's bytes are signed (TDPBSSD 1 1, TDPBSUD 1 0, TDPBUSD 0 1, TDPBUUD 0 0) */
ACCV_OP void accv_tile_dpb(const char *what, int c, int a, int b, int sa, int sb)
{
    unsigned m, k, n, i, j, kk, q;
    accv_emu_tmul_shape(what, c, a, b, &m, &k, &n);
    for (i = 0; i < m; i++) {
        for (j = 0; j < n; j++) {
            uint32_t acc = (uint32_t)accv_tile_s32(c, i, j);
            for (kk = 0; kk < k; kk++)
                for (q = 0; q < 4; q++) {
                    uint8_t x = accv_emu_amx.t[a][i][4 * kk + q], y = accv_emu_amx.t[b][kk][4 * j + q];
                    int32_t xv = sa ? (int32_t)(int8_t)x : (int32_t)x, yv = sb ? (int32_t)(int8_t)y : (int32_t)y;
                    acc += (uint32_t)(xv * yv);  /* |x * y| <= 2^15: no overflow; the sum wraps */
                }
            memcpy(&accv_emu_amx.t[c][i][4 * j], &acc, 4);
        }
        memset(&accv_emu_amx.t[c][i][4 * n], 0, 64 - 4 * n);
    }
    accv_emu_tile_zero_row_from(c, m);
}

static inline float accv_bf16(const uint8_t *p) { return accv_u2f((uint32_t)(p[0] | p[1] << 8) << 16); }

#define ACCV_BF16_NAN 0x7FC00000u

static inline float accv_bf16_add(float a, float b)
{
    double r;
    if (accv_isnan(a)) return accv_quiet(a);
    if (accv_isnan(b)) return accv_quiet(b);
    r = (double)accv_daz_always(a) + (double)accv_daz_always(b);
    if (r != r) return accv_u2f(ACCV_BF16_NAN);
    return accv_round(r, 1);
}

static inline float accv_bf16_fma(float a, float b, float c)
{
    if (accv_isnan(a)) return accv_quiet(a);
    if (accv_isnan(b)) return accv_quiet(b);
    if (accv_isnan(c)) return accv_quiet(c);
    return accv_fma_core(accv_daz_always(a), accv_daz_always(b), accv_daz_always(c), 1, ACCV_BF16_NAN);
}

ACCV_OP void accv_tile_dpbf16ps(int c, int a, int b)
{
    unsigned m, k, n, i, j, kk;
    accv_emu_tmul_shape("TDPBF16PS", c, a, b, &m, &k, &n);
    for (i = 0; i < m; i++) {
        for (j = 0; j < n; j++) {
            float even = 0.0f, odd = 0.0f, cv;
            for (kk = 0; kk < k; kk++) {
                even = accv_bf16_fma(accv_bf16(&accv_emu_amx.t[a][i][4 * kk]), accv_bf16(&accv_emu_amx.t[b][kk][4 * j]), even);
                odd = accv_bf16_fma(accv_bf16(&accv_emu_amx.t[a][i][4 * kk + 2]), accv_bf16(&accv_emu_amx.t[b][kk][4 * j + 2]), odd);
            }
            memcpy(&cv, &accv_emu_amx.t[c][i][4 * j], 4);
            cv = accv_bf16_add(cv, accv_bf16_add(even, odd));
            memcpy(&accv_emu_amx.t[c][i][4 * j], &cv, 4);
        }
        memset(&accv_emu_amx.t[c][i][4 * n], 0, 64 - 4 * n);
    }
    accv_emu_tile_zero_row_from(c, m);
}

/* the intrinsics take tile numbers as constants, as <immintrin.h>'s macros do */
#define _tile_loadd(t, base, stride) accv_tile_loadd((t), (base), (long)(stride))
#define _tile_stream_loadd(t, base, stride) accv_tile_loadd((t), (base), (long)(stride))
#define _tile_stored(t, base, stride) accv_tile_stored((t), (base), (long)(stride))
#define _tile_zero(t) accv_tile_zero(t)
#define _tile_dpbssd(c, a, b) accv_tile_dpb("TDPBSSD", (c), (a), (b), 1, 1)
#define _tile_dpbsud(c, a, b) accv_tile_dpb("TDPBSUD", (c), (a), (b), 1, 0)
#define _tile_dpbusd(c, a, b) accv_tile_dpb("TDPBUSD", (c), (a), (b), 0, 1)
#define _tile_dpbuud(c, a, b) accv_tile_dpb("TDPBUUD", (c), (a), (b), 0, 0)
#define _tile_dpbf16ps(c, a, b) accv_tile_dpbf16ps((c), (a), (b))

#endif /* ACCV_AMX_EMULATION_H */
