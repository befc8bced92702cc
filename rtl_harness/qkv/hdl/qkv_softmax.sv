// qkv_softmax: rows addr..addr+n-1 of d2, in place: y = e / sum(e), e = exp(x), all bf16.
//
// Numerics follow the reference graph of the instruction (compilers/targets/qkv.py) exactly:
//   e[j]  = exp(x[j])                       qkv_bf16_exp (table generated from the reference)
//   s     = reduce(e, +0, bf16 add) in XLA's TreeReductionRewriter order for 64 elements:
//           w0 = fold(+0, e[0..31]), w1 = fold(+0, e[32..63]), s = (+0 + w0) + w1, each add
//           rounded to bf16 (qkv_bf16_add)
//   y[j]  = e[j] / s                        qkv_bf16_div (exact division, f32 then bf16 rounding)
//
// Per row: read (1 cycle, overlapped with the previous row's write), 32 cycles of exp with the two
// window sums running side by side (two exp units, two adders), 2 cycles for the final sum,
// 64/DIV_LANES cycles of division, 1 write cycle: 39 cycles a row with 16 dividers.

module qkv_softmax #(
  parameter int DIV_LANES = 16,
  localparam int DG = 64 / DIV_LANES
) (
  input  logic          clk,
  input  logic          rst_n,
  input  logic          start,
  input  logic [6:0]    n,
  input  logic [5:0]    addr,
  output logic          active,
  // d2 read port
  output logic          d2_re,
  output logic [5:0]    d2_rrow,
  input  logic [1023:0] d2_rdata,
  // d2 write port
  output logic          d2_we,
  output logic [5:0]    d2_wrow,
  output logic [1023:0] d2_wdata,
  output logic [63:0]   d2_wmask
);
  localparam logic [2:0] S_IDLE = 3'd0, S_EXP = 3'd1, S_SUM0 = 3'd2, S_SUM1 = 3'd3, S_DIV = 3'd4,
                         S_WR = 3'd5;
  logic [2:0]    st;
  logic [5:0]    base, r, last;
  logic [4:0]    t;
  logic [5:0]    dg;
  logic [15:0]   x0, x1, e0, e1, s0, s1, tot;
  logic [15:0]   add0_a, add0_b, add0_y, add1_y;
  logic [1023:0] erow, yrow;
  logic [16*DIV_LANES-1:0] q;

  assign active = (st != S_IDLE);

  // the row read: at start, and in the write cycle of the previous row
  assign d2_re   = start || (st == S_WR && r != last);
  assign d2_rrow = start ? addr : base + r + 6'd1;
  assign d2_we   = (st == S_WR);
  assign d2_wrow = base + r;
  assign d2_wdata = yrow;
  assign d2_wmask = {64{1'b1}};

  // exp of elements t and 32 + t of the row just read (d2_rdata holds it)
  always_comb begin
    x0 = d2_rdata[15:0];
    x1 = d2_rdata[16*32 +: 16];
    for (int j = 1; j < 32; j++)
      if (t == 5'(j)) begin
        x0 = d2_rdata[16*j +: 16];
        x1 = d2_rdata[16*(32 + j) +: 16];
      end
  end
  qkv_bf16_exp u_exp0 (.x(x0), .y(e0));
  qkv_bf16_exp u_exp1 (.x(x1), .y(e1));

  // adder 0: window 0 during S_EXP, then (+0 + w0) and (that + w1); adder 1: window 1
  always_comb begin
    add0_a = s0;
    add0_b = e0;
    if (st == S_SUM0) begin add0_a = 16'h0000; add0_b = s0; end
    if (st == S_SUM1) begin add0_a = tot;      add0_b = s1; end
  end
  qkv_bf16_add u_add0 (.a(add0_a), .b(add0_b), .y(add0_y));
  qkv_bf16_add u_add1 (.a(s1), .b(e1), .y(add1_y));

  // divider lane l takes element dg * DIV_LANES + l (a DG-input mux; constant part-selects only)
  for (genvar l = 0; l < DIV_LANES; l++) begin : g_div
    logic [15:0] num;
    always_comb begin
      num = erow[16*l +: 16];
      for (int x = 1; x < DG; x++)
        if (dg == 6'(x)) num = erow[16*(x * DIV_LANES + l) +: 16];
    end
    qkv_bf16_div u_div (.a(num), .b(tot), .y(q[16*l +: 16]));
  end

  always_ff @(posedge clk or negedge rst_n) begin
    if (!rst_n) begin
      st <= S_IDLE;
      base <= '0;
      r <= '0;
      last <= '0;
      t <= '0;
      dg <= '0;
      s0 <= '0;
      s1 <= '0;
      tot <= '0;
    end else begin
      case (st)
        S_IDLE: if (start) begin
          st <= S_EXP;
          base <= addr;
          r <= '0;
          last <= 6'(n - 7'd1);
          t <= '0;
          s0 <= 16'h0000;
          s1 <= 16'h0000;
        end
        S_EXP: begin
          s0 <= add0_y;
          s1 <= add1_y;
          t <= t + 5'd1;
          if (t == 5'd31) st <= S_SUM0;
        end
        S_SUM0: begin
          tot <= add0_y;
          st <= S_SUM1;
        end
        S_SUM1: begin
          tot <= add0_y;
          dg <= '0;
          st <= S_DIV;
        end
        S_DIV: begin
          dg <= dg + 6'd1;
          if (32'(dg) == DG - 1) st <= S_WR;
        end
        S_WR: begin
          if (r == last) st <= S_IDLE;
          else begin
            r <= r + 6'd1;
            t <= '0;
            s0 <= 16'h0000;
            s1 <= 16'h0000;
            st <= S_EXP;
          end
        end
        default: st <= S_IDLE;
      endcase
    end
  end

  // the row of exps and the row of results: one register per element with its own enable
  for (genvar j = 0; j < 64; j++) begin : g_row
    always_ff @(posedge clk) begin
      if (st == S_EXP && t == 5'(j % 32)) erow[16*j +: 16] <= (j < 32) ? e0 : e1;
      if (st == S_DIV && dg == 6'(j / DIV_LANES)) yrow[16*j +: 16] <= q[16*(j % DIV_LANES) +: 16];
    end
  end
endmodule
