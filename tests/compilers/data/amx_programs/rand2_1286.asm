.target amx
.output 0 @64 f32[]
.const @64 fd81cc40
