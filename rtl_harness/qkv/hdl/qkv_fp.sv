// Small bf16 floating-point units of the QKV datapath (all combinational), in XLA:CPU's
// environment (docs/semantics.md): a bf16 operation is the f32 operation (DAZ operands, FTZ result)
// rounded once to f32, then rounded to bf16 (RNE; every NaN becomes 0x7fc0 / 0xffc0, sign kept).
//
//   qkv_f32_to_bf16  f32 -> bf16 RNE (subnormals kept, NaN canonical with its sign)
//   qkv_bf16_add     bf16 a + b, the reduce region of softmax's row sum (a's NaN first)
//   qkv_bf16_div     bf16 a / b: exact 27-bit long division of the significands, RNE to f32,
//                    FTZ, then RNE to bf16 -- bit-exact with the reference's f32 divide
//   qkv_bf16_exp     bf16 exp(x): range rules + the generated 4096-entry table qkv_exp_rom

module qkv_f32_to_bf16 (
  input  logic [31:0] x,
  output logic [15:0] y
);
  /* verilator lint_off UNUSEDSIGNAL */
  logic [31:0] t;   // the low half is rounded away
  /* verilator lint_on UNUSEDSIGNAL */
  always_comb begin
    t = x + 32'h0000_7fff + {31'd0, x[16]};
    if (x[30:23] == 8'hff && x[22:0] != 23'd0) y = {x[31], 15'h7fc0};
    else                                     y = t[31:16];
  end
endmodule

// a + b = fma(a, 1.0, b) rounded to f32 then bf16: the product a * 1.0 is a itself, so the NaN
// priority (a before b) and every rounding are those of the reference's bf16 add(a, b).
module qkv_bf16_add (
  input  logic [15:0] a,
  input  logic [15:0] b,
  output logic [15:0] y
);
  logic [31:0] s;
  qkv_fma u_fma (.a(a), .b(16'h3f80), .c({b, 16'd0}), .r(s));
  qkv_f32_to_bf16 u_rnd (.x(s), .y(y));
endmodule

module qkv_bf16_div (
  input  logic [15:0] a,
  input  logic [15:0] b,
  output logic [15:0] y
);
  logic        sa, sb, sq;
  logic [7:0]  ea, eb;
  logic        a_zero, b_zero, a_inf, b_inf, a_nan, b_nan;
  logic [8:0]  rem;
  logic [26:0] q;
  logic [23:0] mant;
  logic        guard, stk, inc;
  /* verilator lint_off UNUSEDSIGNAL */
  logic [24:0] m25;   // bit 23 is the implicit one
  /* verilator lint_on UNUSEDSIGNAL */
  logic signed [10:0] er, er_rnd;
  logic [31:0] f;

  always_comb begin
    sa = a[15]; ea = a[14:7];
    sb = b[15]; eb = b[14:7];
    sq = sa ^ sb;
    a_zero = (ea == 8'd0);  a_inf = (ea == 8'hff) && (a[6:0] == 7'd0);  a_nan = (ea == 8'hff) && (a[6:0] != 7'd0);
    b_zero = (eb == 8'd0);  b_inf = (eb == 8'hff) && (b[6:0] == 7'd0);  b_nan = (eb == 8'hff) && (b[6:0] != 7'd0);

    // restoring division of the significands: q = floor(ma / mb * 2^26), rem != 0 -> inexact
    rem = {1'b0, 1'b1, a[6:0]};
    q = '0;
    for (int i = 26; i >= 0; i--) begin
      if (rem >= {1'b0, 1'b1, b[6:0]}) begin
        q[i] = 1'b1;
        rem = rem - {1'b0, 1'b1, b[6:0]};
      end
      rem = {rem[7:0], 1'b0};
    end
    er = $signed({3'b000, ea}) - $signed({3'b000, eb}) - (q[26] ? 11'sd0 : 11'sd1);
    if (q[26]) begin mant = q[26:3]; guard = q[2]; stk = (q[1:0] != 2'd0) || (rem != 9'd0); end
    else       begin mant = q[25:2]; guard = q[1]; stk = q[0] || (rem != 9'd0); end
    inc = guard & (stk | mant[0]);
    m25 = {1'b0, mant} + {24'd0, inc};
    er_rnd = m25[24] ? er + 11'sd1 : er;
    if (er < -11'sd126)         f = {sq, 31'd0};                       // FTZ on the exact quotient
    else if (er_rnd > 11'sd127) f = {sq, 8'hff, 23'd0};
    else                        f = {sq, 8'(er_rnd + 11'sd127), (m25[24] ? 23'd0 : m25[22:0])};

    if (a_nan)                                  f = {sa, 31'h7fc0_0000};
    else if (b_nan)                             f = {sb, 31'h7fc0_0000};
    else if ((a_zero && b_zero) || (a_inf && b_inf)) f = 32'hffc0_0000;   // fresh NaN
    else if (a_inf || b_zero)                   f = {sq, 8'hff, 23'd0};
    else if (a_zero || b_inf)                   f = {sq, 31'd0};
  end
  qkv_f32_to_bf16 u_rnd (.x(f), .y(y));
endmodule

// exp(x) of a bf16 x as the reference computes it (f64 exp of the DAZ operand, FTZ, RNE to f32,
// RNE to bf16). Outside biased exponents [118, 133] the result is constant per range (checked
// exhaustively by the generator, rtl_harness/qkv/gen_exp_rom.py); inside, the table gives it.
module qkv_bf16_exp (
  input  logic [15:0] x,
  output logic [15:0] y
);
  logic [15:0] rom;
  logic [7:0]  e;
  logic [3:0]  eoff;   // exponent - 118 inside the table's range [118, 133]
  assign e = x[14:7];
  assign eoff = e[3:0] - 4'd6;   // 118 = 0x76: the low nibble minus 6, mod 16
  qkv_exp_rom u_rom (.idx({x[15], eoff, x[6:0]}), .val(rom));
  always_comb begin
    if (e == 8'hff && x[6:0] != 7'd0) y = {x[15], 15'h7fc0};        // NaN: quieted, sign kept
    else if (e == 8'hff)               y = x[15] ? 16'h0000 : 16'h7f80; // exp(-inf) = 0, exp(inf) = inf
    else if (e < 8'd118)               y = 16'h3f80;                     // |x| < 2^-9 (and DAZ zeros): 1.0
    else if (e > 8'd133)               y = x[15] ? 16'h0000 : 16'h7f80; // |x| >= 128: FTZ / overflow
    else                               y = rom;
  end
endmodule
