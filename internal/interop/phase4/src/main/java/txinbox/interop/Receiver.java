package txinbox.interop; final class Receiver { static void run(java.util.Map<String,String> o) {} }
