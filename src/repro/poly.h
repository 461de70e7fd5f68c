// The constants of pot-repro/1's transcendental functions (docs/PROTOCOL.md
// 14.6), shared by the scalar definitions (arith.cpp) and the vector paths
// (elementwise.cpp), so both evaluate one formula. Internal to src/repro.
#pragma once

#include <cstdint>

namespace pot::repro::poly {

// ln 2 split in two: kLn2Hi has 17 significant bits, so k * kLn2Hi is exact
// for every |k| <= 150 the functions use.
inline constexpr float kLn2Hi = 0x1.62e4p-1f;
inline constexpr float kLn2Lo = 0x1.7f7d1cp-20f;
inline constexpr float kLog2e = 0x1.715476p0f;
// Adding and subtracting 1.5 * 2^23 rounds |t| < 2^22 to the nearest
// integer, ties to even, with two IEEE additions.
inline constexpr float kRoundShift = 0x1.8p23f;

// exp's Taylor coefficients 1/n! rounded to binary32, Horner from the top:
// p = kExp[0]; p = p * r + kExp[i] for i = 1..7.
inline constexpr float kExp[8] = {
    0x1.a01a02p-13f,  // 1/5040
    0x1.6c16c2p-10f,  // 1/720
    0x1.111112p-7f,   // 1/120
    0x1.555556p-5f,   // 1/24
    0x1.555556p-3f,   // 1/6
    0.5f,
    1.0f,
    1.0f,
};

// erf below 0.5 in magnitude: x * P(x^2), P by Horner from the top:
// 2/sqrt(pi) (x - x^3/3 + x^5/10 - x^7/42 + x^9/216 - x^11/1320 + x^13/9360).
inline constexpr float kErfSmall[7] = {
    0x1.f9a326p-14f,   //  2/sqrt(pi)/9360
    -0x1.c02db4p-11f,  // -2/sqrt(pi)/1320
    0x1.565bcep-8f,    //  2/sqrt(pi)/216
    -0x1.b82ce4p-6f,   // -2/sqrt(pi)/42
    0x1.ce2f22p-4f,    //  2/sqrt(pi)/10
    -0x1.812746p-2f,   // -2/sqrt(pi)/3
    0x1.20dd76p0f,     //  2/sqrt(pi)
};
// erf from 0.5 to 4 (Abramowitz and Stegun 7.1.26): t = 1 / (1 + kErfP a),
// 1 - (a1 t + ... + a5 t^5) exp(-a^2), the a_i by Horner from a5.
inline constexpr float kErfP = 0.3275911f;
inline constexpr float kErfA[5] = {1.061405429f, -1.453152027f, 1.421413741f, -0.284496736f, 0.254829592f};

// A uniform draw from one Philox output word: its top 24 bits times 2^-24,
// in [0, 1), exact in binary32.
inline float uniform_of_word(uint32_t w) { return static_cast<float>(w >> 8) * 0x1p-24f; }

// GELU's 1/sqrt(2) and 1/sqrt(2 pi).
inline constexpr float kInvSqrt2 = 0x1.6a09e6p-1f;
inline constexpr float kInvSqrt2Pi = 0x1.988454p-2f;

}  // namespace pot::repro::poly
