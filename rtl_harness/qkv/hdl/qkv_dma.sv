// qkv_dma: the four HBM <-> d1 instructions.
//
//   load_rm  (n, HBM addr_in, d1 row addr_out): HBM bytes [addr_in, +128n) -> rows addr_out..+n-1
//   load_cm  (n = 64): HBM row r of the 64x64 block -> column r of rows addr_out..+63 (transpose)
//   store_rm (n, d1 row addr_in, HBM addr_out):  rows addr_in..+n-1 -> HBM bytes [addr_out, +128n)
//   store_cm (n = 64): column r of rows addr_in..+63 -> HBM row r (transpose)
//
// HBM port: 64-byte beats at any byte address (a d1 row is two beats, lower half first). Requests
// are valid/ready; a read's data comes back on rsp_valid/rsp_rdata in request order, any number of
// cycles later (at least one), and is always accepted (it goes straight into d1). Writes are posted:
// the memory applies every request in the order it accepts them. One beat per cycle at full
// rate, so a load or store of n rows takes 2n + O(1) cycles.
// d1's skewed banks give the transposes for free (qkv_buf column mode).

module qkv_dma (
  input  logic          clk,
  input  logic          rst_n,
  input  logic          start,
  input  logic [1:0]    kind,        // 0 load_rm, 1 load_cm, 2 store_rm, 3 store_cm
  input  logic [7:0]    n,
  input  logic [19:0]   haddr,       // HBM byte address
  input  logic [6:0]    row,         // d1 row
  output logic          active,
  // HBM
  output logic          hbm_req_valid,
  input  logic          hbm_req_ready,
  output logic          hbm_req_we,
  output logic [19:0]   hbm_req_addr,
  output logic [511:0]  hbm_req_wdata,
  input  logic          hbm_rsp_valid,
  input  logic [511:0]  hbm_rsp_rdata,
  // d1 read port (stores)
  output logic          d1_re,
  output logic          d1_rcol,
  output logic [6:0]    d1_rrow,
  output logic [5:0]    d1_rsel,
  input  logic [1023:0] d1_rdata,
  // d1 write port (loads)
  output logic          d1_we,
  output logic          d1_wcol,
  output logic [6:0]    d1_wrow,
  output logic [5:0]    d1_wsel,
  output logic [1023:0] d1_wdata,
  output logic [63:0]   d1_wmask
);
  logic        is_load, is_cm, sending;
  logic [8:0]  nbeats, req_cnt, rsp_cnt;
  logic [19:0] base_h;
  logic [6:0]  base_r;
  logic        req_fire, last_req, last_rsp;
  logic [6:0]  rd_row;               // row (rm) / column (cm) index of the next d1 read

  assign req_fire = hbm_req_valid && hbm_req_ready;
  assign last_req = (req_cnt == nbeats - 9'd1);
  assign last_rsp = (rsp_cnt == nbeats - 9'd1);

  // ---- HBM requests ----
  assign hbm_req_valid = active && (is_load ? (req_cnt != nbeats) : sending);
  assign hbm_req_we    = !is_load;
  assign hbm_req_addr  = base_h + {5'd0, req_cnt, 6'd0};
  assign hbm_req_wdata = req_cnt[0] ? d1_rdata[1023:512] : d1_rdata[511:0];

  // ---- d1 reads (stores): the first row at start, row r+1 when row r's second beat goes ----
  always_comb begin
    d1_re = 1'b0;
    rd_row = 7'd0;
    if (start && kind[1]) begin
      d1_re = 1'b1;
      rd_row = 7'd0;
    end else if (active && !is_load && req_fire && req_cnt[0] && !last_req) begin
      d1_re = 1'b1;
      rd_row = req_cnt[7:1] + 7'd1;   // < n <= 128
    end
  end
  // at start the unit's registers are not loaded yet: address from the instruction fields
  assign d1_rcol = start ? kind[0] : is_cm;
  assign d1_rrow = (start ? row : base_r) + ((start ? kind[0] : is_cm) ? 7'd0 : rd_row);
  assign d1_rsel = (start ? kind[0] : is_cm) ? rd_row[5:0] : 6'd0;

  // ---- d1 writes (loads): beat b of the response stream is HBM row b/2, half b%2 ----
  assign d1_we    = active && is_load && hbm_rsp_valid;
  assign d1_wcol  = is_cm;
  assign d1_wrow  = is_cm ? base_r : base_r + rsp_cnt[7:1];
  assign d1_wsel  = rsp_cnt[6:1];
  assign d1_wdata = {hbm_rsp_rdata, hbm_rsp_rdata};
  assign d1_wmask = rsp_cnt[0] ? {{32{1'b1}}, 32'd0} : {32'd0, {32{1'b1}}};

  always_ff @(posedge clk or negedge rst_n) begin
    if (!rst_n) begin
      active <= 1'b0;
      sending <= 1'b0;
      is_load <= 1'b0;
      is_cm <= 1'b0;
      nbeats <= '0;
      req_cnt <= '0;
      rsp_cnt <= '0;
      base_h <= '0;
      base_r <= '0;
    end else if (start) begin
      active <= 1'b1;
      is_load <= !kind[1];
      is_cm <= kind[0];
      sending <= kind[1];          // a store's first d1 read is issued in this cycle
      nbeats <= {n, 1'b0};
      req_cnt <= '0;
      rsp_cnt <= '0;
      base_h <= haddr;
      base_r <= row;
    end else if (active) begin
      if (req_fire) req_cnt <= req_cnt + 9'd1;
      if (is_load) begin
        if (hbm_rsp_valid) begin
          rsp_cnt <= rsp_cnt + 9'd1;
          if (last_rsp) active <= 1'b0;
        end
      end else if (req_fire && last_req) begin
        active <= 1'b0;
        sending <= 1'b0;
      end
    end
  end
endmodule
