// Gemmini-ISA RTL: the fp32 datapath of the scale units (written for accv from IEEE 754 and
// ../shared/reference/gemmini.md; no code from other projects).
//
// What belongs here: combinational fp32 building blocks with round-to-nearest-even, and the scale
// lane that chains them the way gemmini.md defines mvin / mvout scaling:
//   int32 -> fp32 (RNE) -> * scale (fp32, RNE) -> round half to even to an integer -> saturate int8.
// Subnormal inputs and outputs are handled exactly (no flush to zero), as numpy float32 computes.
// Any NaN (an operand, or inf * 0) converts to int8 0, which is what numpy's float32 -> int8 cast
// gives on the machines the functional model runs on (x86-64: cvttss2si yields 0x80000000, whose
// low byte is 0); infinities and finite values beyond the int8 range saturate.

// Leading-zero count of a 48-bit word (48 when the word is zero).
module gemmini_clz48 (
  input  logic [47:0] x,
  output logic [5:0]  n
);
  always_comb begin
    n = 6'd48;
    for (int i = 0; i < 48; i++) begin
      if (x[i]) n = 6'(47 - i);
    end
  end
endmodule

// Signed int32 -> fp32, round to nearest even (int32 -> float32 as numpy's astype does).
module gemmini_i2f (
  input  logic [31:0] x,
  output logic [31:0] f
);
  logic        s;
  logic [31:0] mag;
  logic [5:0]  lz;
  logic [47:0] norm;
  logic        inc;
  logic [30:0] body;

  assign s   = x[31];
  assign mag = s ? (~x + 32'd1) : x;       // |x|; 2^31 fits as unsigned

  gemmini_clz48 u_clz (.x({mag, 16'd0}), .n(lz));

  always_comb begin
    norm = {mag, 16'd0} << lz;             // norm[47] is the leading one
    // value = 1.norm[46:24] * 2^(31 - lz); 23 fraction bits, guard norm[23], sticky below
    inc  = norm[23] & ((|norm[22:16]) | norm[24]);
    body = {8'(8'd158 - 8'(lz)), norm[46:24]} + 31'(inc);   // a carry moves into the exponent
    f    = (x == 32'd0) ? 32'd0 : {s, body};
  end
endmodule

// fp32 * fp32, IEEE 754 round to nearest even, gradual underflow; NaN results are the quiet NaN
// 0x7FC00000 (payloads are not observable after the int8 conversion).
module gemmini_fmul (
  input  logic [31:0] a,
  input  logic [31:0] b,
  output logic [31:0] p
);
  logic        sa, sb, s;
  logic [7:0]  ea, eb;
  logic [22:0] fa, fb;
  logic        a_nan, b_nan, a_inf, b_inf, a_zero, b_zero;
  logic [23:0] ma, mb;
  logic [47:0] prod, norm, den;
  logic [5:0]  lz;
  logic signed [11:0] xa, xb;  // effective biased exponents (subnormals count as 1)
  logic signed [11:0] be;      // biased exponent of norm (may be <= 0: subnormal result)
  logic [11:0] sh;
  logic        sticky_out, g, st, inc;
  logic [30:0] body;

  assign sa = a[31];
  assign ea = a[30:23];
  assign fa = a[22:0];
  assign sb = b[31];
  assign eb = b[30:23];
  assign fb = b[22:0];
  assign ma = {ea != 8'd0, fa};
  assign mb = {eb != 8'd0, fb};
  assign prod = 48'(ma) * 48'(mb);

  gemmini_clz48 u_clz (.x(prod), .n(lz));

  always_comb begin
    s  = sa ^ sb;
    a_nan  = (ea == 8'hFF) && (fa != 23'd0);
    b_nan  = (eb == 8'hFF) && (fb != 23'd0);
    a_inf  = (ea == 8'hFF) && (fa == 23'd0);
    b_inf  = (eb == 8'hFF) && (fb == 23'd0);
    a_zero = (ea == 8'd0) && (fa == 23'd0);
    b_zero = (eb == 8'd0) && (fb == 23'd0);
    norm = prod << lz;
    // value = prod * 2^(ea' + eb' - 300) with e' = max(e, 1); after normalisation the biased
    // exponent is ea' + eb' - 126 - lz
    xa = (ea == 8'd0) ? 12'sd1 : $signed({4'd0, ea});
    xb = (eb == 8'd0) ? 12'sd1 : $signed({4'd0, eb});
    be = xa + xb - 12'sd126 - $signed({6'd0, lz});
    sh = 12'(12'sd1 - be);
    den = norm;
    sticky_out = 1'b0;
    if (be < 12'sd1) begin
      if (sh >= 12'd48) begin
        den = 48'd0;
        sticky_out = 1'b1;                 // norm != 0 here
      end else begin
        den = norm >> sh;
        sticky_out = (norm & ((48'd1 << sh) - 48'd1)) != 48'd0;
      end
    end
    g   = den[23];
    st  = (|den[22:0]) | sticky_out;
    inc = g & (st | den[24]);
    body = {(be < 12'sd1) ? 8'd0 : be[7:0], den[46:24]} + 31'(inc);
    if (a_nan || b_nan || (a_inf && b_zero) || (b_inf && a_zero)) p = 32'h7FC00000;
    else if (a_inf || b_inf)                                      p = {s, 8'hFF, 23'd0};
    else if (a_zero || b_zero)                                    p = {s, 31'd0};
    else if (be >= 12'sd255)                                      p = {s, 8'hFF, 23'd0};
    else                                                          p = {s, body};
  end
endmodule

// fp32 -> int8: round half to even to an integer, then saturate to [-128, 127]; NaN -> 0.
module gemmini_f2i8 (
  input  logic [31:0] f,
  output logic [7:0]  q
);
  logic        s;
  logic [7:0]  e;
  logic [23:0] m;
  logic [4:0]  sh;
  logic [8:0]  ip, r;
  logic        g, st;
  always_comb begin
    s  = f[31];
    e  = f[30:23];
    m  = {1'b1, f[22:0]};
    sh = 5'(8'd150 - e);                  // 16..24 for e in [126, 134]
    ip = 9'(m >> sh);
    g  = m[sh - 5'd1];
    st = (m & ((24'd1 << (sh - 5'd1)) - 24'd1)) != 24'd0;
    r  = ip + {8'd0, g & (st | ip[0])};   // <= 256
    if (e == 8'hFF && f[22:0] != 23'd0) q = 8'd0;                          // NaN
    else if (e >= 8'd135)               q = s ? 8'h80 : 8'h7F;             // |f| >= 256, inf
    else if (e < 8'd126)                q = 8'd0;                          // |f| < 0.5
    else if (s)                         q = (r > 9'd128) ? 8'h80 : 8'(-r);
    else                                q = (r > 9'd127) ? 8'h7F : r[7:0];
  end
endmodule

// One lane of the scale unit: int32 x, fp32 scale bits -> int8 (gemmini.md mvin/mvout scaling).
module gemmini_scale_lane (
  input  logic [31:0] x,
  input  logic [31:0] scale,
  output logic [7:0]  q
);
  logic [31:0] xf, pf;
  gemmini_i2f  u_i2f (.x(x), .f(xf));
  gemmini_fmul u_mul (.a(xf), .b(scale), .p(pf));
  gemmini_f2i8 u_f2i (.f(pf), .q(q));
endmodule

// DIM lanes sharing one scale.
module gemmini_scaler #(
  parameter int DIM = 16
) (
  input  logic [DIM*32-1:0] x,
  input  logic [31:0]       scale,
  output logic [DIM*8-1:0]  q
);
  for (genvar l = 0; l < DIM; l++) begin : g_lane
    gemmini_scale_lane u_lane (.x(x[l*32 +: 32]), .scale(scale), .q(q[l*8 +: 8]));
  end
endmodule
