// Gemmini-ISA RTL: one processing element of the systolic mesh, and the DIM x DIM mesh of them.
//
// What belongs here: the PE (one 8 x 20-bit multiplier, four registers and a flip bit) and the
// mesh that wires DIM*DIM PEs to their neighbours. Every register moves one hop per cycle:
//   a  (int8)   flows left -> right along a mesh row (operand A, skewed by the feeder), and with it
//               `flip`, which marks the first row of a command whose weights were preloaded;
//   v  (20 bit) flows top -> bottom along a column: in WS the partial sum (bias enters at the top,
//               the result leaves at the bottom), in OS the sign-extended B operand;
//   c  (20 bit) the stationary state: WS weight, OS accumulator. It shifts one row down per cycle
//               while `shift` is high (preload enters at the top; the controller rotates the bottom
//               row back to the top to read the OS results out without losing them);
//   s  (20 bit) the shadow weight (WS double buffering): it shifts one row down per cycle while
//               `sshift` is high, so the next command's weights are loaded while the current
//               command's rows still stream through the mesh; a PE whose `flip` input is high takes
//               s as its weight for that row on and copies it into c (the flip reaches PE (q, j)
//               together with the first row of the command, so no row ever meets mixed weights).
// Partial sums are 20 bits (Gemmini's SInt(20) spatial-array output type); every addition and
// product wraps modulo 2^20, so the column sum equals the functional model's _wrap20(d + a @ w).
// The multiplier is 8 x 20 bits because after an OS accumulation the state (later used as a WS
// weight by compute_accumulated) may hold any 20-bit value.

module gemmini_pe (
  input  logic        clk,
  input  logic        rst_n,
  input  logic        ws,      // 1 weight stationary, 0 output stationary
  input  logic        shift,   // state chain: c <= c_in
  input  logic        mac,     // OS: c <= c + a_in * v_in
  input  logic        sshift,  // shadow chain: s <= s_in
  input  logic [7:0]  a_in,
  input  logic        f_in,    // WS: this row is the first with the shadow weights
  input  logic [19:0] v_in,
  input  logic [19:0] c_in,
  input  logic [19:0] s_in,
  output logic [7:0]  a_out,
  output logic        f_out,
  output logic [19:0] v_out,
  output logic [19:0] c_out,
  output logic [19:0] s_out
);
  logic [7:0]  a_q;
  logic        f_q;
  logic [19:0] v_q, c_q, s_q;
  logic signed [19:0] prod, w;

  // WS: a * weight (the shadow from the flip on); OS: a * b (v carries the sign-extended b).
  // Low 20 bits of the product.
  assign w    = (ws && f_in) ? s_q : c_q;
  assign prod = $signed(a_in) * $signed(ws ? w : v_in);

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      a_q <= '0;
      f_q <= 1'b0;
      v_q <= '0;
      c_q <= '0;
      s_q <= '0;
    end else begin
      a_q <= a_in;
      f_q <= f_in;
      v_q <= ws ? (v_in + prod) : v_in;
      if (shift)              c_q <= c_in;
      else if (!ws && mac)    c_q <= c_q + prod;
      else if (ws && f_in)    c_q <= s_q;
      if (sshift)             s_q <= s_in;
    end
  end

  assign a_out = a_q;
  assign f_out = f_q;
  assign v_out = v_q;
  assign c_out = c_q;
  assign s_out = s_q;
endmodule

module gemmini_mesh #(
  parameter int DIM = 16
) (
  input  logic                 clk,
  input  logic                 rst_n,
  input  logic                 ws,
  input  logic                 shift,
  input  logic                 mac,
  input  logic                 sshift,
  input  logic [DIM*8-1:0]     feed_a,    // left edge, one int8 per mesh row
  input  logic [DIM-1:0]       feed_f,    // left edge, the flip bit per mesh row
  input  logic [DIM*20-1:0]    feed_v,    // top edge, one 20-bit value per column
  input  logic [DIM*20-1:0]    feed_c,    // top edge of the state chain
  input  logic [DIM*20-1:0]    feed_s,    // top edge of the shadow chain
  output logic [DIM*20-1:0]    out_v,     // bottom edge of the v chain
  output logic [DIM*20-1:0]    out_c,     // bottom row of the state
  output logic [DIM*DIM*20-1:0] state     // every PE's state, row-major (debug / observation)
);
  // Each PE's registered outputs (unpacked, one element per PE: compact in Verilator; yosys turns
  // them into wires, mem2reg). PE (r, c) is element r*DIM + c. A PE's inputs are its left / upper
  // neighbour's outputs, or the mesh edge inputs in column 0 / row 0.
  (* mem2reg *) logic [7:0]  a_o [DIM*DIM];
  (* mem2reg *) logic [19:0] v_o [DIM*DIM];
  (* mem2reg *) logic [19:0] c_o [DIM*DIM];
  (* mem2reg *) logic [19:0] s_o [DIM*DIM];
  (* mem2reg *) logic        f_o [DIM*DIM];

  for (genvar r = 0; r < DIM; r++) begin : g_row
    for (genvar c = 0; c < DIM; c++) begin : g_col
      logic [7:0]  a_in;
      logic        f_in;
      logic [19:0] v_in, c_in, s_in;
      if (c == 0) begin : g_left
        assign a_in = feed_a[r*8 +: 8];
        assign f_in = feed_f[r];
      end else begin : g_a
        assign a_in = a_o[r*DIM + c - 1];
        assign f_in = f_o[r*DIM + c - 1];
      end
      if (r == 0) begin : g_top
        assign v_in = feed_v[c*20 +: 20];
        assign c_in = feed_c[c*20 +: 20];
        assign s_in = feed_s[c*20 +: 20];
      end else begin : g_vc
        assign v_in = v_o[(r-1)*DIM + c];
        assign c_in = c_o[(r-1)*DIM + c];
        assign s_in = s_o[(r-1)*DIM + c];
      end
      gemmini_pe u_pe (
        .clk(clk), .rst_n(rst_n), .ws(ws), .shift(shift), .mac(mac), .sshift(sshift),
        .a_in(a_in), .f_in(f_in), .v_in(v_in), .c_in(c_in), .s_in(s_in),
        .a_out(a_o[r*DIM + c]), .f_out(f_o[r*DIM + c]), .v_out(v_o[r*DIM + c]),
        .c_out(c_o[r*DIM + c]), .s_out(s_o[r*DIM + c])
      );
      assign state[(r*DIM + c)*20 +: 20] = c_o[r*DIM + c];
    end
  end
  for (genvar c = 0; c < DIM; c++) begin : g_bottom
    assign out_v[c*20 +: 20] = v_o[(DIM-1)*DIM + c];
    assign out_c[c*20 +: 20] = c_o[(DIM-1)*DIM + c];
  end
endmodule
