// qkv_gemm: d2[addr_out + i][j] = bf16( sum_k d1[addr_1 + i][k] * d1[addr_2 + k][j] ), 64 x 64 x 64.
//
// Numerics (bit-exact with the reference dot, docs/semantics.md): each output element has an f32
// accumulator starting at +0 and takes one fused multiply-add per k = 0..63 in increasing order
// (qkv_fma: DAZ operands, exact product, one RNE rounding, FTZ), then one RNE rounding to bf16.
//
// Dataflow: LANES output columns in parallel (a 1 x LANES vector of MAC lanes; LANES divides 64).
// For output row i: read A row d1[addr_1 + i] into a register, then for each group of LANES
// columns stream B rows d1[addr_2 + k], k = 0..63, one per cycle through d1's read port; lane l
// accumulates A[i][k] * B[k][g*LANES + l]. The rounded results of a group are written to d2 when
// k = 63. A gemm takes 64 * (1 + 64 * 64/LANES) + 1 cycles (4,161 with 64 lanes).
// The accumulation is a one-cycle combinational FMA per lane (a faster clock would pipeline the
// FMA and interleave as many output rows as it has stages).

module qkv_gemm #(
  parameter int LANES = 64,
  localparam int G = 64 / LANES,
  localparam int GW = (G > 1) ? $clog2(G) : 1
) (
  input  logic          clk,
  input  logic          rst_n,
  input  logic          start,
  input  logic [6:0]    addr_1,
  input  logic [6:0]    addr_2,
  input  logic [5:0]    addr_out,
  output logic          active,
  // d1 read port
  output logic          d1_re,
  output logic [6:0]    d1_rrow,
  input  logic [1023:0] d1_rdata,
  // d2 write port
  output logic          d2_we,
  output logic [5:0]    d2_wrow,
  output logic [1023:0] d2_wdata,
  output logic [63:0]   d2_wmask
);
  // sequencer: issues one d1 read per cycle (A row of i, then B rows k = 0..63 per group)
  logic          run, ph_b;
  logic [5:0]    i, k;
  logic [GW-1:0] g;
  logic [6:0]    a1, a2;
  logic [5:0]    ao;
  // consumer: one cycle behind (the read data)
  logic          c_v, c_b;
  logic [5:0]    c_i, c_k;
  logic [GW-1:0] c_g;
  logic [1023:0] areg;
  logic [15:0]   a_elem;
  logic [32*LANES-1:0] fma_r;
  logic [16*LANES-1:0] res;

  assign active = run || c_v;
  assign d1_re = run;
  assign d1_rrow = ph_b ? a2 + {1'b0, k} : a1 + {1'b0, i};

  always_ff @(posedge clk or negedge rst_n) begin
    if (!rst_n) begin
      run <= 1'b0;
      ph_b <= 1'b0;
      i <= '0;
      k <= '0;
      g <= '0;
      a1 <= '0;
      a2 <= '0;
      ao <= '0;
      c_v <= 1'b0;
      c_b <= 1'b0;
      c_i <= '0;
      c_k <= '0;
      c_g <= '0;
    end else begin
      c_v <= run;
      c_b <= ph_b;
      c_i <= i;
      c_k <= k;
      c_g <= g;
      if (start) begin
        run <= 1'b1;
        ph_b <= 1'b0;
        i <= '0;
        k <= '0;
        g <= '0;
        a1 <= addr_1;
        a2 <= addr_2;
        ao <= addr_out;
      end else if (run) begin
        if (!ph_b) begin
          ph_b <= 1'b1;
          k <= '0;
          g <= '0;
        end else begin
          k <= k + 6'd1;
          if (k == 6'd63) begin
            if (32'(g) == G - 1) begin
              g <= '0;
              ph_b <= 1'b0;
              i <= i + 6'd1;
              if (i == 6'd63) run <= 1'b0;
            end else begin
              g <= g + 1'b1;
            end
          end
        end
      end
    end
  end

  always_ff @(posedge clk) if (c_v && !c_b) areg <= d1_rdata;

  assign a_elem = areg[16*c_k +: 16];

  for (genvar l = 0; l < LANES; l++) begin : g_lane
    logic [15:0] b_elem;
    logic [31:0] acc_in, acc;
    if (G > 1) begin : g_sel
      assign b_elem = d1_rdata[16*(32'(c_g) * LANES + l) +: 16];
    end else begin : g_one
      assign b_elem = d1_rdata[16*l +: 16];
    end
    assign acc_in = (c_k == 6'd0) ? 32'h0000_0000 : acc;
    qkv_fma u_fma (.a(a_elem), .b(b_elem), .c(acc_in), .r(fma_r[32*l +: 32]));
    qkv_f32_to_bf16 u_rnd (.x(fma_r[32*l +: 32]), .y(res[16*l +: 16]));
    always_ff @(posedge clk) if (c_v && c_b) acc <= fma_r[32*l +: 32];
  end

  // write a finished group of LANES results at k = 63
  assign d2_we = c_v && c_b && (c_k == 6'd63);
  assign d2_wrow = ao + c_i;
  always_comb begin
    d2_wdata = '0;
    d2_wmask = '0;
    for (int x = 0; x < G; x++) begin
      if (32'(c_g) == x) begin
        d2_wdata[16*LANES*x +: 16*LANES] = res;
        d2_wmask[LANES*x +: LANES] = {LANES{1'b1}};
      end
    end
  end
endmodule
