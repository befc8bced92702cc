// qkv_fma: r = a * b + c with ONE rounding to f32 (round to nearest even), in XLA:CPU's
// floating-point environment (docs/semantics.md): subnormal operands read as zeros of their sign
// (DAZ), a result whose exact value is below 2^-126 becomes a zero of its sign (FTZ, tininess
// before rounding). a, b are bf16 (their product is exact: 8 x 8 significand bits), c is f32.
//
// NaN: a NaN result is 0x7fc00000 with a sign chosen as the reference's f64 evaluation does:
// a's sign if a is NaN, else b's if b is NaN, else negative for inf * 0 (fresh NaN); then c's sign
// if c is NaN; else negative for inf - inf. The payload is not propagated (every consumer of this
// unit rounds to bf16, where every NaN becomes 0x7fc0 / 0xffc0 with its sign).
//
// Datapath (W = 32 bits): the operand with the larger leading-bit exponent (X) is placed with its
// leading one at bit W-2, the other (Y) is shifted right by the exponent difference; bits shifted
// out are ORed into bit 0 (sticky). X has at most 24 significant bits and Y's lowest bit sits at
// bit 7 or lower only after a shift, so bits are lost only for differences >= 8, where at most one
// bit cancels and the round bit is at bit 5 or above: the computed sum then has the same bits as
// the exact one from bit 1 up and a nonzero low part exactly when the exact one does, which is all
// RNE and the FTZ test need. Shorter differences are exact (cancellation of any length).
// Purely combinational: one accumulation step per cycle in the gemm lanes.

module qkv_fma (
  input  logic [15:0] a,
  input  logic [15:0] b,
  input  logic [31:0] c,
  output logic [31:0] r
);
  /*verilator no_inline_module*/   // one C++ copy for all lanes: the Verilated model builds faster
  localparam int W = 32;

  logic        sa, sb, sc, sp;
  logic [7:0]  ea, eb, ec;
  logic        a_zero, b_zero, c_zero, a_inf, b_inf, c_inf, a_nan, b_nan, c_nan;
  logic        p_nan, p_nan_sign, p_inf, p_zero;

  logic [15:0] pm, pn;            // exact product significand, normalized (bit 15 set)
  logic signed [10:0] p_top, c_top, x_top, er, er_rnd;
  logic        p_big;
  logic [W-1:0] xm, ym, yk, sum, nrm;
  logic [2*W-1:0] ysh;
  logic [10:0] d;
  logic        sticky_y, sx, sy, sub, rsign, y_gt_x;
  logic [5:0]  lz;
  /* verilator lint_off UNUSEDSIGNAL */
  logic [24:0] m25;   // bit 23 is the implicit one
  /* verilator lint_on UNUSEDSIGNAL */
  logic        guard, stk, inc;
  logic [31:0] gen;

  always_comb begin
    sa = a[15]; ea = a[14:7];
    sb = b[15]; eb = b[14:7];
    sc = c[31]; ec = c[30:23];
    a_zero = (ea == 8'd0);  a_inf = (ea == 8'hff) && (a[6:0] == 7'd0);  a_nan = (ea == 8'hff) && (a[6:0] != 7'd0);
    b_zero = (eb == 8'd0);  b_inf = (eb == 8'hff) && (b[6:0] == 7'd0);  b_nan = (eb == 8'hff) && (b[6:0] != 7'd0);
    c_zero = (ec == 8'd0);  c_inf = (ec == 8'hff) && (c[22:0] == 23'd0); c_nan = (ec == 8'hff) && (c[22:0] != 23'd0);
    sp = sa ^ sb;
    p_nan = a_nan | b_nan | (a_inf & b_zero) | (a_zero & b_inf);
    p_nan_sign = a_nan ? sa : (b_nan ? sb : 1'b1);
    p_inf = (a_inf | b_inf) & ~p_nan;
    p_zero = (a_zero | b_zero) & ~p_nan & ~p_inf;

    // ---- general path (both finite, product nonzero; c may be zero) ----
    pm = {1'b1, a[6:0]} * {1'b1, b[6:0]};
    pn = pm[15] ? pm : {pm[14:0], 1'b0};
    p_top = $signed({3'b000, ea}) + $signed({3'b000, eb}) - 11'sd254 + $signed({10'd0, pm[15]});
    c_top = $signed({3'b000, ec}) - 11'sd127;
    p_big = c_zero || (p_top >= c_top);
    x_top = p_big ? p_top : c_top;
    d = p_big ? 11'(p_top - c_top) : 11'(c_top - p_top);
    // X: leading one at bit W-2; Y: leading one at bit W-2 before the shift
    xm = p_big ? {1'b0, pn, 15'd0} : {1'b0, 1'b1, c[22:0], 7'd0};
    ym = p_big ? (c_zero ? '0 : {1'b0, 1'b1, c[22:0], 7'd0}) : {1'b0, pn, 15'd0};
    sx = p_big ? sp : sc;
    sy = p_big ? sc : sp;
    ysh = {ym, {W{1'b0}}} >> d[4:0];
    if (d >= 11'(W)) begin          // Y lies wholly below bit 0: only its sticky bit is left
      yk = '0;
      sticky_y = (ym != '0);
    end else begin
      yk = ysh[2*W-1:W];
      sticky_y = (ysh[W-1:0] != '0);
    end
    yk[0] = yk[0] | sticky_y;      // bit 0 of a shifted Y is always 0 before this (slot for sticky)
    sub = sx ^ sy;
    y_gt_x = (yk > xm);            // only possible when d == 0 (then nothing was lost)
    if (!sub)       sum = xm + yk;
    else if (y_gt_x) sum = yk - xm;
    else            sum = xm - yk;
    rsign = sub ? (y_gt_x ? sy : sx) : sx;

    // normalize: leading-zero count and shift in 5 stages (16, 8, 4, 2, 1)
    nrm = sum;
    lz = 6'd0;
    if (nrm[31:16] == 16'd0) begin nrm = {nrm[15:0], 16'd0}; lz = lz + 6'd16; end
    if (nrm[31:24] == 8'd0)  begin nrm = {nrm[23:0], 8'd0};  lz = lz + 6'd8;  end
    if (nrm[31:28] == 4'd0)  begin nrm = {nrm[27:0], 4'd0};  lz = lz + 6'd4;  end
    if (nrm[31:30] == 2'd0)  begin nrm = {nrm[29:0], 2'd0};  lz = lz + 6'd2;  end
    if (nrm[31] == 1'b0)     begin nrm = {nrm[30:0], 1'b0};  lz = lz + 6'd1;  end
    er = x_top + 11'sd1 - $signed({5'd0, lz});
    guard = nrm[7];
    stk = (nrm[6:0] != 7'd0);
    inc = guard & (stk | nrm[8]);
    m25 = {1'b0, nrm[31:8]} + {24'd0, inc};
    er_rnd = m25[24] ? er + 11'sd1 : er;

    if (sum == '0)              gen = 32'h0000_0000;                 // exact cancellation: +0
    else if (er < -11'sd126)    gen = {rsign, 31'd0};                // FTZ (exact value below 2^-126)
    else if (er_rnd > 11'sd127) gen = {rsign, 8'hff, 23'd0};         // overflow to infinity
    else gen = {rsign, 8'(er_rnd + 11'sd127), (m25[24] ? 23'd0 : m25[22:0])};

    // ---- special cases ----
    if (p_nan)                        r = {p_nan_sign, 31'h7fc0_0000};
    else if (c_nan)                   r = {sc, 31'h7fc0_0000};
    else if (p_inf && c_inf && (sp != sc)) r = 32'hffc0_0000;
    else if (p_inf)                   r = {sp, 8'hff, 23'd0};
    else if (c_inf)                   r = {sc, 8'hff, 23'd0};
    else if (p_zero && c_zero)        r = {sp & sc, 31'd0};
    else if (p_zero)                  r = c;
    else                              r = gen;
  end
endmodule
